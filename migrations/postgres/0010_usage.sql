-- Usage and spend (issue 15). Twin: ../sqlite/0010_usage.sql.
-- The model a run was queued with (its agent's at the time), so spend by model survives agent edits;
-- null for runs queued before, which are attributed to their agent's current model.
alter table run add column model text;
-- Monthly spend caps (UTC calendar month); null means no cap.
alter table workspace add column cap_usd double precision;
alter table workspace add column cap_tokens bigint;
alter table agent add column cap_usd double precision;
alter table agent add column cap_tokens bigint;
-- The workspace's own rate table (model -> USD per million tokens, as JSON); null: the built-in one.
alter table workspace add column rate_table jsonb;
-- The 80% warnings already given: one per cap (the workspace's, or an agent's) per month.
create table cap_warning (
    workspace_id uuid not null references workspace on delete cascade,
    scope        text not null,
    month        text not null,
    created_at   timestamptz not null,
    constraint cap_warning_pkey primary key (workspace_id, scope, month)
);
-- The usage page reads a workspace's runs by creation time.
create index run_workspace_created_idx on run (workspace_id, created_at);
