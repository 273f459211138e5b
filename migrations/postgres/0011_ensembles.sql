-- Ensembles: named teams of agents that take one issue blind, judged on checks and one blind review; the
-- workspace's default check command. Twin: ../sqlite/0011_ensembles.sql.

alter table workspace add column check_command text;
alter table workspace add column check_timeout_secs integer not null default 600;

-- A named team; its members, check, early-stop policy, reviewer and budget are one JSON document
-- (EnsembleSettings), validated by the server before it is written.
create table ensemble (
    ensemble_id  uuid primary key,
    workspace_id uuid not null references workspace on delete cascade,
    name         text not null,
    settings     jsonb not null,
    created_at   timestamptz not null,
    updated_at   timestamptz not null,
    constraint ensemble_workspace_name_key unique (workspace_id, name)
);

-- One issue taken by an ensemble. It keeps a snapshot of the ensemble's settings (editing or deleting the
-- ensemble never changes a run under way); its candidates and its reviewer are runs carrying its id.
create table ensemble_run (
    ensemble_run_id uuid primary key,
    workspace_id    uuid not null references workspace on delete cascade,
    issue_id        uuid not null references issue on delete cascade,
    ensemble_id     uuid references ensemble on delete set null,
    name            text not null,
    number          integer not null,
    settings        jsonb not null,
    base_commit     text,
    base_branch     text,
    status          text not null default 'running'
        constraint ensemble_run_status_check check (status in ('running', 'reviewing', 'decided', 'chosen')),
    stop_reason     text,
    review_run_id   uuid references run on delete set null,
    review_labels   jsonb,
    review          jsonb,
    chosen_run_id   uuid references run on delete set null,
    chosen_by       uuid references app_user on delete set null,
    merged_commit   text,
    created_at      timestamptz not null,
    decided_at      timestamptz,
    constraint ensemble_run_issue_number_key unique (issue_id, number)
);
create index ensemble_run_workspace_idx on ensemble_run (workspace_id, created_at);

alter table run add column ensemble_run_id uuid references ensemble_run on delete set null;
create index run_ensemble_idx on run (ensemble_run_id) where ensemble_run_id is not null;
