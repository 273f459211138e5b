-- When a comment's body was last edited by its author (null: never). Twin: ../postgres/0005_comment_edited.sql.
alter table comment add column edited_at text;
