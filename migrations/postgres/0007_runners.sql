-- Remote runners (`muster runner`): workspace-scoped runner tokens, runners identified by (token, name),
-- lease epochs on runs, and agents bound to named runners. Twin: ../sqlite/0007_runners.sql.

-- A runner token is a workspace's credential for its runners: shown once, stored hashed like an API token.
create table runner_token (
    runner_token_id uuid primary key,
    workspace_id    uuid not null references workspace on delete cascade,
    name            text not null,
    prefix          text not null,
    token_hash      text not null constraint runner_token_token_hash_key unique,
    created_by      uuid references app_user on delete set null,
    created_at      timestamptz not null,
    last_used_at    timestamptz,
    revoked_at      timestamptz
);
create index runner_token_workspace_idx on runner_token (workspace_id, created_at);

-- An embedded runner has no workspace and no token and keeps its globally unique name; a remote runner is
-- identified by (token, name), so a reconnecting runner keeps its id and the runs it holds.
alter table runner add column workspace_id uuid references workspace on delete cascade;
alter table runner add column token_id uuid references runner_token on delete cascade;
alter table runner add constraint runner_remote_check check ((workspace_id is null) = (token_id is null));
alter table runner drop constraint runner_name_key;
create unique index runner_name_key on runner (name) where token_id is null;
alter table runner add constraint runner_token_name_key unique (token_id, name);

-- Every claim increments the epoch; a runner's events, renewals and finish count only at its claim's epoch.
alter table run add column lease_epoch bigint not null default 0;

-- The runner names an agent's runs may go to (any runner when empty).
alter table agent add column runner_names jsonb not null default '[]';
