-- Full-text search over issues and their comments (FTS5). Twin: ../postgres/0017_search.sql.
--
-- `search_doc` gives each issue (comment_id null) and each comment an integer id, the FTS rowid;
-- `search_fts` indexes the title and body of issues and the body of comments (contentless: the text
-- stays in `issue` and `comment`). Words are runs of letters and digits, case-folded, accents kept,
-- as PostgreSQL's twin splits them. Only the first 100,000 characters of a body are indexed, as there.
-- Triggers keep both in step with every insert, edit and delete.

create table search_doc (
    search_doc_id integer primary key autoincrement,
    issue_id      text not null,
    comment_id    text,
    constraint search_doc_comment_key unique (comment_id)
);
create unique index search_doc_issue_key on search_doc (issue_id) where comment_id is null;
create index search_doc_issue_idx on search_doc (issue_id);

create virtual table search_fts using fts5 (
    title,
    body,
    content = '',
    contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 0'
);

-- Oldest change first, so that rowid order is updated_at order (then number) from the start.
insert into search_doc (issue_id) select issue_id from issue order by updated_at, workspace_id, number;
insert into search_doc (issue_id, comment_id) select issue_id, comment_id from comment;
insert into search_fts (rowid, title, body)
    select d.search_doc_id, i.title, substr(i.body, 1, 100000)
    from search_doc d join issue i on i.issue_id = d.issue_id
    where d.comment_id is null;
insert into search_fts (rowid, title, body)
    select d.search_doc_id, '', substr(c.body, 1, 100000)
    from search_doc d join comment c on c.comment_id = d.comment_id;

create trigger search_issue_insert after insert on issue begin
    insert into search_doc (issue_id) values (new.issue_id);
    insert into search_fts (rowid, title, body) values (
        (select search_doc_id from search_doc where issue_id = new.issue_id and comment_id is null),
        new.title, substr(new.body, 1, 100000));
end;

-- An issue's document is renumbered on every change of its updated_at (edits, moves), so the newest
-- rowid is the most recently updated issue: search reads the best matches first, in rowid order, and
-- stops after its limit instead of sorting every match of a common word.
create trigger search_issue_update after update of title, body, updated_at on issue begin
    delete from search_fts where rowid =
        (select search_doc_id from search_doc where issue_id = old.issue_id and comment_id is null);
    delete from search_doc where issue_id = old.issue_id and comment_id is null;
    insert into search_doc (issue_id) values (new.issue_id);
    insert into search_fts (rowid, title, body) values (
        (select search_doc_id from search_doc where issue_id = new.issue_id and comment_id is null),
        new.title, substr(new.body, 1, 100000));
end;

-- With its comments' documents too, whether or not their own trigger runs for the cascade.
create trigger search_issue_delete after delete on issue begin
    delete from search_fts where rowid in
        (select search_doc_id from search_doc where issue_id = old.issue_id);
    delete from search_doc where issue_id = old.issue_id;
end;

create trigger search_comment_insert after insert on comment begin
    insert into search_doc (issue_id, comment_id) values (new.issue_id, new.comment_id);
    insert into search_fts (rowid, title, body) values (
        (select search_doc_id from search_doc where comment_id = new.comment_id),
        '', substr(new.body, 1, 100000));
end;

create trigger search_comment_update after update of body on comment begin
    delete from search_fts where rowid =
        (select search_doc_id from search_doc where comment_id = new.comment_id);
    insert into search_fts (rowid, title, body) values (
        (select search_doc_id from search_doc where comment_id = new.comment_id),
        '', substr(new.body, 1, 100000));
end;

create trigger search_comment_delete after delete on comment begin
    delete from search_fts where rowid in
        (select search_doc_id from search_doc where comment_id = old.comment_id);
    delete from search_doc where comment_id = old.comment_id;
end;
