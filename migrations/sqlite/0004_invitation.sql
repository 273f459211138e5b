-- Invitations: an existing account joins a workspace only when it accepts. A pending invitation is a row;
-- accepting (which adds the member), declining and revoking delete it. Re-inviting refreshes the row.
-- Twin: ../postgres/0004_invitation.sql.
create table invitation (
    invitation_id text not null constraint invitation_pkey primary key,
    workspace_id  text not null references workspace on delete cascade,
    user_id       text not null references app_user on delete cascade,
    role          text not null constraint invitation_role_check check (role in ('owner', 'admin', 'member')),
    invited_by    text references app_user on delete set null,
    created_at    text not null,
    expires_at    text not null,
    constraint invitation_workspace_user_key unique (workspace_id, user_id)
);
create index invitation_user_idx on invitation (user_id);
