-- What started a run, the run it follows up, the comments it answers, comments waiting for an agent's
-- live run to end, and the workspace's loop-guard limits. Twin: ../postgres/0008_run_triggers.sql.

-- Existing runs were all started by an assignment (or retried from one).
alter table run add column trigger text not null default 'assignment'
    constraint run_trigger_check check (trigger in ('assignment', 'comment', 'mention', 'retry'));
alter table run add column trigger_comment_id text references comment on delete set null;
-- The last run of the same agent on the same issue when a follow-up was queued (its session and branch).
alter table run add column previous_run_id text references run on delete set null;
create index run_agent_issue_idx on run (issue_id, agent_id, created_at);

-- The comments a run answers: a queued follow-up folds in every comment that arrives before it is claimed.
create table run_comment (
    run_id     text not null references run on delete cascade,
    comment_id text not null references comment on delete cascade,
    constraint run_comment_pkey primary key (run_id, comment_id)
);

-- Comments for an agent that had a live run on the issue when they arrived: the run's end queues a
-- follow-up carrying them (so none is lost). `chain_depth` is the depth a run it queued would have had, so
-- that waiting for a live run never resets the loop guard's count.
create table pending_comment (
    issue_id   text not null references issue on delete cascade,
    agent_id   text not null references agent on delete cascade,
    comment_id text not null references comment on delete cascade,
    chain_depth integer not null,
    constraint pending_comment_pkey primary key (issue_id, agent_id, comment_id)
);

alter table workspace add column mention_depth_limit integer not null default 3;
alter table workspace add column agent_runs_per_issue_per_hour integer not null default 10;
