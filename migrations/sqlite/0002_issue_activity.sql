-- The activity trail of an issue: status changes, assignments, edits. Twin: ../postgres/0002_issue_activity.sql.
create table issue_activity (
    issue_activity_id text primary key,
    issue_id          text not null references issue on delete cascade,
    actor_user_id     text references app_user on delete set null,
    actor_agent_id    text references agent on delete set null,
    kind              text not null,
    detail            text not null,
    created_at        text not null
);
create index issue_activity_issue_idx on issue_activity (issue_id, created_at);
