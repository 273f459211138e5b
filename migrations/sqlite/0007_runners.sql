-- no-transaction
-- Remote runners (`muster runner`): workspace-scoped runner tokens, runners identified by (token, name),
-- lease epochs on runs, and agents bound to named runners. Twin: ../postgres/0007_runners.sql.
--
-- SQLite cannot drop the `runner_name_key` constraint, so `runner` is rebuilt (SQLite's documented
-- twelve steps). Dropping a table that `run.runner_id` refers to would run its `on delete set null` unless
-- foreign keys are off, and that pragma is ignored inside a transaction: hence `no-transaction` above and
-- the explicit transaction below, which keeps the rebuild all-or-nothing.
pragma foreign_keys = off;
begin immediate;

-- A runner token is a workspace's credential for its runners: shown once, stored hashed like an API token.
create table runner_token (
    runner_token_id text primary key,
    workspace_id    text not null references workspace on delete cascade,
    name            text not null,
    prefix          text not null,
    token_hash      text not null constraint runner_token_token_hash_key unique,
    created_by      text references app_user on delete set null,
    created_at      text not null,
    last_used_at    text,
    revoked_at      text
);
create index runner_token_workspace_idx on runner_token (workspace_id, created_at);

-- An embedded runner has no workspace and no token and keeps its globally unique name; a remote runner is
-- identified by (token, name), so a reconnecting runner keeps its id and the runs it holds.
create table runner_new (
    runner_id         text primary key,
    name              text not null,
    version           text not null,
    detected          text not null,
    last_heartbeat_at text not null,
    created_at        text not null,
    workspace_id      text references workspace on delete cascade,
    token_id          text references runner_token on delete cascade,
    constraint runner_remote_check check ((workspace_id is null) = (token_id is null)),
    constraint runner_token_name_key unique (token_id, name)
);
insert into runner_new (runner_id, name, version, detected, last_heartbeat_at, created_at)
    select runner_id, name, version, detected, last_heartbeat_at, created_at from runner;
drop table runner;
alter table runner_new rename to runner;
create unique index runner_name_key on runner (name) where token_id is null;

-- Every claim increments the epoch; a runner's events, renewals and finish count only at its claim's epoch.
alter table run add column lease_epoch integer not null default 0;

-- The runner names an agent's runs may go to (any runner when empty).
alter table agent add column runner_names text not null default '[]';

commit;
pragma foreign_keys = on;
