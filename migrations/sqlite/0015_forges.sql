-- Forges: a workspace's connection to the forge project its repository lives in (GitHub, GitLab,
-- Gitea/Forgejo), the pull requests Muster opened there for agents' work, and the webhook deliveries
-- already taken (a replay is refused). Twin: ../postgres/0015_forges.sql.

-- One connection per workspace; its token and webhook secret are sealed by the server's secret box.
create table forge_connection (
    forge_connection_id   text primary key,
    workspace_id          text not null references workspace on delete cascade,
    kind                  text not null
        constraint forge_connection_kind_check check (kind in ('github', 'gitlab', 'gitea')),
    api_url               text not null,
    repo                  text not null,
    token_sealed          text not null,
    webhook_secret_sealed text not null,
    auto_open             integer not null default 0,
    max_rounds            integer not null default 3,
    on_close              text not null default 'todo'
        constraint forge_connection_on_close_check check (on_close in ('todo', 'cancelled')),
    created_by            text not null references app_user,
    created_at            text not null,
    constraint forge_connection_workspace_key unique (workspace_id)
);

-- A pull request (merge request) for one line of work: an agent on an issue. Checks and reviews are the
-- latest state per check name and per reviewer, as JSON lists.
create table pull_request (
    pull_request_id     text primary key,
    workspace_id        text not null references workspace on delete cascade,
    forge_connection_id text not null references forge_connection on delete cascade,
    issue_id            text not null references issue on delete cascade,
    agent_id            text not null references agent on delete cascade,
    run_id              text not null references run on delete cascade,
    number              integer not null,
    url                 text not null,
    branch              text not null,
    base                text not null,
    state               text not null default 'open'
        constraint pull_request_state_check check (state in ('open', 'merged', 'closed')),
    draft               integer not null default 0,
    head_sha            text not null,
    mergeable           integer,
    checks              text not null default '[]',
    reviews             text not null default '[]',
    rounds              integer not null default 0,
    limit_noticed       integer not null default 0,
    superseded_by       text references pull_request on delete set null,
    created_at          text not null,
    updated_at          text not null,
    constraint pull_request_connection_number_key unique (forge_connection_id, number)
);
create index pull_request_issue_idx on pull_request (issue_id, created_at);
create index pull_request_branch_idx on pull_request (forge_connection_id, branch);

-- Webhook deliveries taken, by the forge's delivery id: a second delivery with the same id is a replay.
create table forge_delivery (
    forge_connection_id text not null references forge_connection on delete cascade,
    delivery_id         text not null,
    received_at         text not null,
    primary key (forge_connection_id, delivery_id)
);
