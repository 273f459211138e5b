-- The issue list: indexes that give each sort's order straight from an index, and saved views. Twin:
-- ../postgres/0020_saved_views.sql.
--
-- A list page is read after a keyset cursor, (sort key, number) > (…, …), in index order, so the first
-- page and a page deep in 100,000 issues cost the same. Sorting by key uses issue_workspace_number_key.
-- The rank expressions must stay the same text as the store's (`store/lists.rs`): SQLite uses an index on
-- an expression only for that very expression.

create index issue_list_updated_idx on issue (workspace_id, updated_at, number);
create index issue_list_created_idx on issue (workspace_id, created_at, number);
create index issue_list_title_idx on issue (workspace_id, title, number);
create index issue_list_priority_idx on issue (workspace_id,
    (case priority when 'urgent' then 0 when 'high' then 1 when 'medium' then 2 when 'low' then 3 else 4 end),
    number);
create index issue_list_status_idx on issue (workspace_id,
    (case status when 'backlog' then 0 when 'todo' then 1 when 'in_progress' then 2 when 'in_review' then 3 when 'done' then 4 when 'blocked' then 5 else 6 end),
    number);

-- A named list URL: its query string (filter, sort, grouping) is the view.
create table saved_view (
    workspace_id text not null references workspace on delete cascade,
    name         text not null,
    query        text not null,
    created_by   text references app_user on delete set null,
    created_at   text not null,
    constraint saved_view_pkey primary key (workspace_id, name)
);
