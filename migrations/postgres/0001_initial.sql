-- Muster's first schema (PostgreSQL). Its twin is ../sqlite/0001_initial.sql; see ../README.md.

create table workspace (
    workspace_id  uuid primary key,
    name          text not null,
    slug          text not null constraint workspace_slug_key unique,
    issue_prefix  text not null,
    issue_counter bigint not null default 0,
    repo_path     text,
    created_at    timestamptz not null
);

create table app_user (
    user_id       uuid primary key,
    email         text not null constraint app_user_email_key unique,
    display_name  text not null,
    password_hash text not null,
    created_at    timestamptz not null
);

create table member (
    workspace_id uuid not null references workspace on delete cascade,
    user_id      uuid not null references app_user on delete cascade,
    role         text not null constraint member_role_check check (role in ('owner', 'admin', 'member')),
    created_at   timestamptz not null,
    constraint member_pkey primary key (workspace_id, user_id)
);

create table session (
    session_id uuid primary key,
    user_id    uuid not null references app_user on delete cascade,
    token_hash text not null constraint session_token_hash_key unique,
    created_at timestamptz not null,
    expires_at timestamptz not null
);

create table agent (
    agent_id            uuid primary key,
    workspace_id        uuid not null references workspace on delete cascade,
    name                text not null,
    color               text not null,
    kind                text not null,
    model               text,
    instructions        text not null,
    env                 jsonb not null,
    extra_args          jsonb not null,
    permission_mode     text not null,
    max_concurrent_runs integer not null,
    stall_timeout_secs  integer not null,
    max_retries         integer not null,
    budget_usd          double precision,
    budget_tokens       bigint,
    command             text,
    base_url            text,
    created_at          timestamptz not null,
    updated_at          timestamptz not null,
    constraint agent_workspace_name_key unique (workspace_id, name)
);

create table issue (
    issue_id          uuid primary key,
    workspace_id      uuid not null references workspace on delete cascade,
    number            bigint not null,
    title             text not null,
    body              text not null,
    status            text not null,
    priority          text not null,
    assignee_user_id  uuid references app_user on delete set null,
    assignee_agent_id uuid references agent on delete set null,
    labels            jsonb not null,
    parent_issue_id   uuid references issue on delete set null,
    position          bigint not null,
    created_by        uuid references app_user on delete set null,
    created_at        timestamptz not null,
    updated_at        timestamptz not null,
    constraint issue_workspace_number_key unique (workspace_id, number),
    constraint issue_one_assignee_check check (assignee_user_id is null or assignee_agent_id is null)
);
create index issue_board_idx on issue (workspace_id, status, position);

create table runner (
    runner_id         uuid primary key,
    name              text not null constraint runner_name_key unique,
    version           text not null,
    detected          jsonb not null,
    last_heartbeat_at timestamptz not null,
    created_at        timestamptz not null
);

create table run (
    run_id             uuid primary key,
    workspace_id       uuid not null references workspace on delete cascade,
    issue_id           uuid not null references issue on delete cascade,
    agent_id           uuid not null references agent on delete restrict,
    status             text not null,
    attempt            integer not null,
    chain_depth        integer not null,
    runner_id          uuid references runner on delete set null,
    lease_expires_at   timestamptz,
    not_before         timestamptz,
    pid                integer,
    worktree           text,
    branch             text,
    session_id         text,
    exit_code          integer,
    failure_reason     text,
    input_tokens       bigint not null default 0,
    output_tokens      bigint not null default 0,
    cache_read_tokens  bigint not null default 0,
    cache_write_tokens bigint not null default 0,
    cost_usd           double precision not null default 0,
    summary            text,
    diff_stat          text,
    stalled_at         timestamptz,
    created_at         timestamptz not null,
    started_at         timestamptz,
    finished_at        timestamptz
);
-- At most one live run per (issue, agent).
create unique index run_one_active_key on run (issue_id, agent_id)
    where status in ('queued', 'claimed', 'running');
create index run_queue_idx on run (status, created_at);
create index run_issue_idx on run (issue_id, created_at);

create table run_event (
    run_id  uuid not null references run on delete cascade,
    seq     bigint not null,
    at      timestamptz not null,
    kind    text not null,
    payload jsonb not null,
    constraint run_event_pkey primary key (run_id, seq)
);

create table comment (
    comment_id      uuid primary key,
    issue_id        uuid not null references issue on delete cascade,
    author_user_id  uuid references app_user on delete set null,
    author_agent_id uuid references agent on delete set null,
    body            text not null,
    run_id          uuid references run on delete set null,
    created_at      timestamptz not null
);
create index comment_issue_idx on comment (issue_id, created_at);

create table api_token (
    api_token_id uuid primary key,
    workspace_id uuid not null references workspace on delete cascade,
    user_id      uuid not null references app_user on delete cascade,
    name         text not null,
    prefix       text not null,
    token_hash   text not null constraint api_token_token_hash_key unique,
    run_id       uuid references run on delete cascade,
    created_at   timestamptz not null,
    last_used_at timestamptz,
    revoked_at   timestamptz
);

create table skill (
    skill_id     uuid primary key,
    workspace_id uuid not null references workspace on delete cascade,
    slug         text not null,
    name         text not null,
    description  text not null,
    body         text not null,
    source       text not null,
    content_hash text not null,
    created_at   timestamptz not null,
    updated_at   timestamptz not null,
    constraint skill_workspace_slug_key unique (workspace_id, slug)
);

create table skill_file (
    skill_id uuid not null references skill on delete cascade,
    path     text not null,
    content  text not null,
    constraint skill_file_pkey primary key (skill_id, path)
);

create table agent_skill (
    agent_id uuid not null references agent on delete cascade,
    skill_id uuid not null references skill on delete cascade,
    enabled  boolean not null,
    constraint agent_skill_pkey primary key (agent_id, skill_id)
);

create table inbox_item (
    inbox_item_id uuid primary key,
    workspace_id  uuid not null references workspace on delete cascade,
    user_id       uuid references app_user on delete cascade,
    kind          text not null,
    issue_id      uuid references issue on delete cascade,
    run_id        uuid references run on delete cascade,
    message       text not null,
    created_at    timestamptz not null,
    resolved_at   timestamptz
);
create index inbox_item_open_idx on inbox_item (workspace_id, resolved_at, created_at);
