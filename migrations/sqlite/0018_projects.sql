-- Projects: a workspace's work grouped under a name, with a lead, a status, a target date, and its own
-- repository and check command (runs of its issues work there instead of in the workspace's). An issue
-- belongs to at most one project; issues keep the workspace's keys (a key that changed with the project
-- would break every branch, pull request and link already made from it). Twin: ../postgres/0018_projects.sql.
create table project (
    project_id         text primary key,
    workspace_id       text not null references workspace on delete cascade,
    -- Short name in URLs, the CLI and filters: `WEB` (2–10 letters or digits, starting with a letter).
    key                text not null,
    name               text not null,
    description        text not null default '',
    lead_user_id       text references app_user on delete set null,
    status             text not null default 'planned'
        constraint project_status_check check (status in ('planned', 'active', 'paused', 'completed', 'cancelled')),
    target_date        text,
    repo_path          text,
    check_command      text,
    check_timeout_secs integer,
    created_by         text references app_user on delete set null,
    created_at         text not null,
    updated_at         text not null,
    constraint project_key_key unique (workspace_id, key),
    constraint project_name_key unique (workspace_id, name)
);

alter table issue add column project_id text references project on delete set null;
create index issue_project_idx on issue (project_id, status) where project_id is not null;
