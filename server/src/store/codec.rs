//! How domain types travel through sqlx on both backends.
//!
//! Ids are native `uuid` on PostgreSQL and hyphenated `text` on SQLite; enums and validated strings are
//! `text` on both, and a value that fails validation on the way out is reported as a decode error (a
//! corrupt row), never trusted.

use std::str::FromStr;

use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::{Database, Decode, Encode, Postgres, Sqlite, Type};
use uuid::Uuid;
use uuid::fmt::Hyphenated;

use crate::domain::{
    ActivityId, ActivityKind, AgentId, AgentName, BlockUntil, CommentId, Email, EnsembleId,
    EnsembleRunId, EnsembleStatus, FailureReason, ForgeConnectionId, ForgeKind, InboxItemId,
    InboxKind, InvitationId, IssueId, IssuePrefix, IssueStatus, IssueTitle, OnClose, PrState,
    Priority, ProjectId, ProjectKey, ProjectName, ProjectStatus, ProposalId, ProposalStatus,
    PullRequestId, RelationKind, Role, RunId, RunPurpose, RunStatus, RunTrigger, RunnerId,
    RunnerTokenId, SessionId, SkillId, SkillSource, Slug, TokenId, UserId, WorkspaceId,
};

macro_rules! uuid_codec {
    ($($t:ty),+ $(,)?) => {$(
        impl Type<Postgres> for $t {
            fn type_info() -> <Postgres as Database>::TypeInfo { <Uuid as Type<Postgres>>::type_info() }
        }
        impl Encode<'_, Postgres> for $t {
            fn encode_by_ref(&self, buf: &mut <Postgres as Database>::ArgumentBuffer) -> Result<IsNull, BoxDynError> {
                <Uuid as Encode<Postgres>>::encode_by_ref(&self.0, buf)
            }
        }
        impl<'r> Decode<'r, Postgres> for $t {
            fn decode(v: <Postgres as Database>::ValueRef<'r>) -> Result<Self, BoxDynError> {
                Ok(Self(<Uuid as Decode<Postgres>>::decode(v)?))
            }
        }
        impl Type<Sqlite> for $t {
            fn type_info() -> <Sqlite as Database>::TypeInfo { <Hyphenated as Type<Sqlite>>::type_info() }
        }
        impl Encode<'_, Sqlite> for $t {
            fn encode_by_ref(&self, buf: &mut <Sqlite as Database>::ArgumentBuffer) -> Result<IsNull, BoxDynError> {
                <Hyphenated as Encode<Sqlite>>::encode_by_ref(&self.0.hyphenated(), buf)
            }
        }
        impl<'r> Decode<'r, Sqlite> for $t {
            fn decode(v: <Sqlite as Database>::ValueRef<'r>) -> Result<Self, BoxDynError> {
                Ok(Self(<Hyphenated as Decode<Sqlite>>::decode(v)?.into_uuid()))
            }
        }
    )+};
}

uuid_codec!(
    WorkspaceId,
    UserId,
    SessionId,
    TokenId,
    IssueId,
    CommentId,
    AgentId,
    SkillId,
    RunnerId,
    RunnerTokenId,
    RunId,
    InboxItemId,
    ActivityId,
    InvitationId,
    EnsembleId,
    EnsembleRunId,
    ForgeConnectionId,
    PullRequestId,
    ProjectId,
    ProposalId,
);

/// Text columns: encoded with `$as_str`, decoded by `$parse` (validation again on the way out).
macro_rules! text_codec_for {
    ($db:ty; $($t:ty => $as_str:expr, $parse:expr);+ $(;)?) => {$(
        impl Type<$db> for $t {
            fn type_info() -> <$db as Database>::TypeInfo { <str as Type<$db>>::type_info() }
            fn compatible(ty: &<$db as Database>::TypeInfo) -> bool { <String as Type<$db>>::compatible(ty) }
        }
        impl Encode<'_, $db> for $t {
            fn encode_by_ref(&self, buf: &mut <$db as Database>::ArgumentBuffer) -> Result<IsNull, BoxDynError> {
                let text: &str = ($as_str)(self);
                <String as Encode<$db>>::encode(text.to_owned(), buf)
            }
        }
        impl<'r> Decode<'r, $db> for $t {
            fn decode(v: <$db as Database>::ValueRef<'r>) -> Result<Self, BoxDynError> {
                let text = <String as Decode<$db>>::decode(v)?;
                Ok(($parse)(text.as_str())?)
            }
        }
    )+};
}

macro_rules! text_codec {
    ($($t:ty => $as_str:expr, $parse:expr);+ $(;)?) => {
        text_codec_for!(Postgres; $($t => $as_str, $parse);+);
        text_codec_for!(Sqlite; $($t => $as_str, $parse);+);
    };
}

text_codec!(
    IssueStatus => |v: &IssueStatus| v.as_str(), str::parse::<IssueStatus>;
    Priority => |v: &Priority| v.as_str(), str::parse::<Priority>;
    Role => |v: &Role| v.as_str(), str::parse::<Role>;
    RunStatus => |v: &RunStatus| v.as_str(), str::parse::<RunStatus>;
    FailureReason => |v: &FailureReason| v.as_str(), str::parse::<FailureReason>;
    InboxKind => |v: &InboxKind| v.as_str(), str::parse::<InboxKind>;
    RunTrigger => |v: &RunTrigger| v.as_str(), str::parse::<RunTrigger>;
    RunPurpose => |v: &RunPurpose| v.as_str(), str::parse::<RunPurpose>;
    ProposalStatus => |v: &ProposalStatus| v.as_str(), str::parse::<ProposalStatus>;
    SkillSource => |v: &SkillSource| v.as_str(), str::parse::<SkillSource>;
    ActivityKind => |v: &ActivityKind| v.as_str(), str::parse::<ActivityKind>;
    EnsembleStatus => |v: &EnsembleStatus| v.as_str(), str::parse::<EnsembleStatus>;
    ForgeKind => |v: &ForgeKind| v.as_str(), str::parse::<ForgeKind>;
    OnClose => |v: &OnClose| v.as_str(), str::parse::<OnClose>;
    PrState => |v: &PrState| v.as_str(), str::parse::<PrState>;
    RelationKind => |v: &RelationKind| v.as_str(), str::parse::<RelationKind>;
    BlockUntil => |v: &BlockUntil| v.as_str(), str::parse::<BlockUntil>;
    ProjectStatus => |v: &ProjectStatus| v.as_str(), str::parse::<ProjectStatus>;
    ProjectKey => ProjectKey::as_str, ProjectKey::parse;
    ProjectName => ProjectName::as_str, ProjectName::parse;
    Slug => Slug::as_str, Slug::parse;
    IssuePrefix => IssuePrefix::as_str, IssuePrefix::parse;
    IssueTitle => IssueTitle::as_str, IssueTitle::parse;
    Email => Email::as_str, Email::parse;
    AgentName => AgentName::as_str, AgentName::parse;
);

/// A name from the agents crate's fixed sets (runtime kind, permission mode), stored as its text like the
/// enums above. The orphan rule keeps sqlx's traits off those types, so rows and binds wrap them.
#[derive(Debug, Clone, Copy)]
pub(super) struct Named<T>(pub T);

macro_rules! named_codec_for {
    ($($db:ty),+) => {$(
        impl<T> Type<$db> for Named<T> {
            fn type_info() -> <$db as Database>::TypeInfo { <str as Type<$db>>::type_info() }
            fn compatible(ty: &<$db as Database>::TypeInfo) -> bool { <String as Type<$db>>::compatible(ty) }
        }
        impl<T: Copy + Into<&'static str>> Encode<'_, $db> for Named<T> {
            fn encode_by_ref(&self, buf: &mut <$db as Database>::ArgumentBuffer) -> Result<IsNull, BoxDynError> {
                let text: &'static str = self.0.into();
                <String as Encode<$db>>::encode(text.to_owned(), buf)
            }
        }
        impl<'r, T: FromStr<Err = muster_agents::UnknownChoice>> Decode<'r, $db> for Named<T> {
            fn decode(v: <$db as Database>::ValueRef<'r>) -> Result<Self, BoxDynError> {
                let text = <String as Decode<$db>>::decode(v)?;
                Ok(Named(text.parse()?))
            }
        }
    )+};
}

named_codec_for!(Postgres, Sqlite);
