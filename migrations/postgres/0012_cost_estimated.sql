-- Whether part of a run's cost was priced by Muster from a rate table (the CLI reported tokens but no
-- cost): the cost then reads "estimated". Twin: ../sqlite/0012_cost_estimated.sql.
alter table run add column cost_estimated boolean not null default false;
-- Runs recorded before: Codex never reports a cost, so a priced Codex run was estimated.
update run set cost_estimated = true
    where cost_usd > 0
      and agent_id in (select agent_id from agent where kind = 'codex');
