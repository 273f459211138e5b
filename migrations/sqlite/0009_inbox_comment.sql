-- The comment an inbox item is about (a mention), so the inbox links to it. Twin:
-- ../postgres/0009_inbox_comment.sql.
alter table inbox_item add column comment_id text references comment on delete set null;
