-- Invitations: an existing account joins a workspace only when it accepts. A pending invitation is a row;
-- accepting (which adds the member), declining and revoking delete it. Re-inviting refreshes the row.
-- Twin: ../sqlite/0004_invitation.sql.
create table invitation (
    invitation_id uuid not null constraint invitation_pkey primary key,
    workspace_id  uuid not null references workspace on delete cascade,
    user_id       uuid not null references app_user on delete cascade,
    role          text not null constraint invitation_role_check check (role in ('owner', 'admin', 'member')),
    invited_by    uuid references app_user on delete set null,
    created_at    timestamptz not null,
    expires_at    timestamptz not null,
    constraint invitation_workspace_user_key unique (workspace_id, user_id)
);
create index invitation_user_idx on invitation (user_id);
