-- A run's git facts: the commit it started from and the commit its work became on its line's branch.
-- The server compares, pushes and merges that commit, never a branch tip read later.
alter table run add column base_commit text;
alter table run add column head_commit text;
