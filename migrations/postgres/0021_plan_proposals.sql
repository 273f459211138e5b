-- The planner: a run that proposes a tree of sub-issues instead of changing code, and the proposals a
-- person edits and approves into issues in one step. Twin: ../sqlite/0021_plan_proposals.sql.

-- What a run is for: work on its issue (the default), or a plan of it (it proposes sub-issues through
-- its token; its issue's status is left alone, and its issue's blockers do not hold it).
alter table run add column purpose text not null default 'work'
    constraint run_purpose_check check (purpose in ('work', 'plan'));

-- One proposed tree under `issue_id`: `items` is the JSON list of proposed sub-issues (ref, title,
-- description, acceptance, agent, blocked_by refs), as proposed and then as approved. A newer proposal
-- for the same issue discards the pending one; approval records who and the issues it made.
create table plan_proposal (
    proposal_id  uuid primary key,
    workspace_id uuid not null references workspace on delete cascade,
    issue_id     uuid not null references issue on delete cascade,
    run_id       uuid references run on delete set null,
    agent_id     uuid references agent on delete set null,
    status       text not null default 'pending'
        constraint plan_proposal_status_check check (status in ('pending', 'approved', 'discarded')),
    summary      text not null default '',
    items        jsonb not null,
    created      jsonb not null default '[]',
    created_at   timestamptz not null,
    decided_at   timestamptz,
    decided_by   uuid references app_user on delete set null
);
create index plan_proposal_issue_idx on plan_proposal (issue_id, created_at);
-- At most one proposal of an issue waits for review.
create unique index plan_proposal_pending_key on plan_proposal (issue_id) where status = 'pending';
