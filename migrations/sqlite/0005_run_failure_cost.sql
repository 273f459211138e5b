-- A run's decisive error message (for the failure text and its details), and whether part of its usage
-- had no price (then its cost is unknown, not $0). Twin: ../postgres/0005_run_failure_cost.sql.
alter table run add column failure_detail text;
alter table run add column cost_unknown integer not null default 0;
-- Runs recorded before: tokens used at no recorded cost by a CLI that is not a local model were unpriced.
update run set cost_unknown = 1
    where cost_usd = 0
      and input_tokens + output_tokens + cache_read_tokens + cache_write_tokens > 0
      and agent_id in (select agent_id from agent where kind <> 'llama');
