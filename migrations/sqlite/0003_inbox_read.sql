-- Per-user read state of inbox items (an item addressed to everyone is read or unread per person).
-- Twin: ../postgres/0003_inbox_read.sql.
create table inbox_read (
    inbox_item_id text not null references inbox_item on delete cascade,
    user_id       text not null references app_user on delete cascade,
    read_at       text not null,
    constraint inbox_read_pkey primary key (inbox_item_id, user_id)
);
create index inbox_read_user_idx on inbox_read (user_id);
