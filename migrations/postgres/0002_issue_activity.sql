-- The activity trail of an issue: status changes, assignments, edits. Twin: ../sqlite/0002_issue_activity.sql.
create table issue_activity (
    issue_activity_id uuid primary key,
    issue_id          uuid not null references issue on delete cascade,
    actor_user_id     uuid references app_user on delete set null,
    actor_agent_id    uuid references agent on delete set null,
    kind              text not null,
    detail            jsonb not null,
    created_at        timestamptz not null
);
create index issue_activity_issue_idx on issue_activity (issue_id, created_at);
