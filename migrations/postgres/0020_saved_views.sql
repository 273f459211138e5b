-- The issue list: indexes that give each sort's order straight from an index, and saved views. Twin:
-- ../sqlite/0020_saved_views.sql.
--
-- A list page is read after a keyset cursor, (sort key, number) > (…, …), in index order, so the first
-- page and a page deep in 100,000 issues cost the same. Sorting by key uses issue_workspace_number_key.
-- Titles sort by bytes (collation "C"), as on SQLite; the rank expressions are the store's
-- (`store/lists.rs`), which an expression index must match.

create index issue_list_updated_idx on issue (workspace_id, updated_at, number);
create index issue_list_created_idx on issue (workspace_id, created_at, number);
create index issue_list_title_idx on issue (workspace_id, (title collate "C"), number);
create index issue_list_priority_idx on issue (workspace_id,
    (case priority when 'urgent' then 0 when 'high' then 1 when 'medium' then 2 when 'low' then 3 else 4 end),
    number);
create index issue_list_status_idx on issue (workspace_id,
    (case status when 'backlog' then 0 when 'todo' then 1 when 'in_progress' then 2 when 'in_review' then 3 when 'done' then 4 when 'blocked' then 5 else 6 end),
    number);

-- A named list URL: its query string (filter, sort, grouping) is the view.
create table saved_view (
    workspace_id uuid not null references workspace on delete cascade,
    name         text not null,
    query        text not null,
    created_by   uuid references app_user on delete set null,
    created_at   timestamptz not null,
    constraint saved_view_pkey primary key (workspace_id, name)
);
