-- Planning: relations between issues ("ACM-2 blocks ACM-4", "relates to", "duplicate of") and the
-- parents that wake their agent once when every child has ended. Sub-issues themselves are
-- issue.parent_issue_id (0001). Twin: ../sqlite/0016_planning.sql.

-- One edge: `from` blocks / relates to / duplicates `to`. A blocks edge holds the runs of `to` until
-- `from` is done (`until_state` 'done') or done with a merged pull request ('merged'); `stacked` starts
-- `to`'s first run from `from`'s branch.
create table issue_relation (
    workspace_id  uuid not null references workspace on delete cascade,
    from_issue_id uuid not null references issue on delete cascade,
    to_issue_id   uuid not null references issue on delete cascade,
    kind          text not null
        constraint issue_relation_kind_check check (kind in ('blocks', 'relates', 'duplicates')),
    until_state   text not null default 'done'
        constraint issue_relation_until_check check (until_state in ('done', 'merged')),
    stacked       boolean not null default false,
    created_by    uuid references app_user on delete set null,
    created_at    timestamptz not null,
    constraint issue_relation_pkey primary key (from_issue_id, to_issue_id, kind),
    constraint issue_relation_self_check check (from_issue_id <> to_issue_id)
);
create index issue_relation_to_idx on issue_relation (to_issue_id, kind);

create index issue_parent_idx on issue (parent_issue_id) where parent_issue_id is not null;

-- A parent whose assigned agent is woken once every child is done or cancelled; `woken` is set when it
-- was (exactly once), and cleared when a child is added or reopened.
create table issue_fan_in (
    issue_id   uuid primary key references issue on delete cascade,
    woken      boolean not null default false,
    created_at timestamptz not null
);
