//! `muster member …` and `muster token …`: the Members and API tokens pages, from the command line.

use clap::Subcommand;
use serde_json::{Value, json};

use super::output::{clean, print_json, table};
use super::{Client, Remote, segment};

/// What to do with members.
#[derive(Debug, Subcommand)]
pub enum MemberCommand {
    /// List members (EMAIL, NAME, ROLE, USER ID).
    List,
    /// Add a member (owners and admins): a new account with an initial password joins at once; an
    /// existing account is invited and joins when it accepts (`muster invitation accept`).
    Add {
        /// Their email address.
        #[arg(long)]
        email: String,
        /// Display name [default: the part of the email before @].
        #[arg(long)]
        name: Option<String>,
        /// Initial password, at least 12 characters (ignored for an existing account).
        #[arg(long)]
        password: Option<String>,
        /// owner, admin or member.
        #[arg(long, default_value = "member")]
        role: String,
    },
    /// Change a member's role (owners and admins; only owners grant or take away ownership).
    Role {
        /// The member's email.
        email: String,
        /// owner, admin or member.
        role: String,
    },
    /// Remove a member (owners and admins; the last owner stays).
    Remove {
        /// The member's email.
        email: String,
    },
    /// List the workspace's pending invitations (EMAIL, ROLE, EXPIRES, ID; owners and admins).
    Invitations,
    /// Revoke a pending invitation by id (owners and admins).
    Revoke {
        /// The invitation's id (from `muster member invitations`).
        id: String,
    },
}

/// What to do with the invitations addressed to you.
#[derive(Debug, Subcommand)]
pub enum InvitationCommand {
    /// List the workspaces that invited you (WORKSPACE, ROLE, INVITED BY, EXPIRES, ID).
    List,
    /// Join the workspace of an invitation.
    Accept {
        /// The invitation's id (from `muster invitation list`).
        id: String,
    },
    /// Decline an invitation.
    Decline {
        /// The invitation's id.
        id: String,
    },
}

/// What to do with API tokens.
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// List your tokens (never their secrets).
    List,
    /// Create a token and print it alone on stdout, once.
    Create {
        /// A name to recognise it by.
        name: String,
    },
    /// Revoke one of your tokens by id.
    Revoke {
        /// The token's id (from `muster token list`).
        id: String,
    },
}

async fn user_id(client: &Client, email: &str) -> anyhow::Result<String> {
    let members = client.get("/api/v1/members").await?;
    let wanted = email.trim().to_lowercase();
    members
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["email"].as_str() == Some(wanted.as_str()))
        .and_then(|m| m["user_id"].as_str().map(str::to_owned))
        .ok_or_else(|| anyhow::anyhow!("no member with email {} in this workspace", clean(email)))
}

fn text(v: &Value, key: &str) -> String {
    clean(v[key].as_str().unwrap_or_default())
}

/// Runs a member command.
pub async fn members(remote: &Remote, command: MemberCommand) -> anyhow::Result<()> {
    let client = remote.connect()?;
    let result = match command {
        MemberCommand::List => {
            let list = client.get("/api/v1/members").await?;
            if !remote.json {
                let rows: Vec<Vec<String>> = list
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|m| {
                        vec![
                            text(m, "email"),
                            text(m, "name"),
                            text(m, "role"),
                            text(m, "user_id"),
                        ]
                    })
                    .collect();
                print!("{}", table(&["EMAIL", "NAME", "ROLE", "USER ID"], &rows));
                return Ok(());
            }
            list
        }
        MemberCommand::Add {
            email,
            name,
            password,
            role,
        } => {
            let body = json!({ "email": email, "name": name, "password": password, "role": role });
            client.post("/api/v1/members", &body).await?
        }
        MemberCommand::Role { email, role } => {
            let id = user_id(&client, &email).await?;
            client
                .patch(
                    &format!("/api/v1/members/{}", segment(&id)),
                    &json!({ "role": role }),
                )
                .await?
        }
        MemberCommand::Remove { email } => {
            let id = user_id(&client, &email).await?;
            client
                .delete(&format!("/api/v1/members/{}", segment(&id)))
                .await?;
            json!({ "removed": email })
        }
        MemberCommand::Invitations => {
            let list = client.get("/api/v1/members/invitations").await?;
            if !remote.json {
                let rows = rows(&list, &["email", "role", "expires_at", "id"]);
                print!("{}", table(&["EMAIL", "ROLE", "EXPIRES", "ID"], &rows));
                return Ok(());
            }
            list
        }
        MemberCommand::Revoke { id } => {
            client
                .delete(&format!("/api/v1/members/invitations/{}", segment(&id)))
                .await?;
            json!({ "revoked": id })
        }
    };
    if remote.json {
        return print_json(&result);
    }
    if let Some(email) = result.get("removed") {
        println!("removed {}", clean(email.as_str().unwrap_or_default()));
    } else if let Some(id) = result.get("revoked") {
        println!(
            "revoked invitation {}",
            clean(id.as_str().unwrap_or_default())
        );
    } else if result.get("expires_at").is_some() {
        println!(
            "invited {} as {}: they join when they accept (until {})",
            text(&result, "email"),
            text(&result, "role"),
            text(&result, "expires_at")
        );
    } else {
        println!("{} is {}", text(&result, "email"), text(&result, "role"));
    }
    Ok(())
}

/// The `keys` of each object of a list, cleaned for a terminal.
fn rows(list: &Value, keys: &[&str]) -> Vec<Vec<String>> {
    list.as_array()
        .into_iter()
        .flatten()
        .map(|v| keys.iter().map(|k| text(v, k)).collect())
        .collect()
}

/// Runs an invitation command.
pub async fn invitations(remote: &Remote, command: InvitationCommand) -> anyhow::Result<()> {
    let client = remote.connect()?;
    let path = |id: &str, action: &str| format!("/api/v1/invitations/{}/{action}", segment(id));
    let result = match command {
        InvitationCommand::List => {
            let list = client.get("/api/v1/invitations").await?;
            if !remote.json {
                let rows = rows(
                    &list,
                    &["workspace", "role", "invited_by", "expires_at", "id"],
                );
                let head = ["WORKSPACE", "ROLE", "INVITED BY", "EXPIRES", "ID"];
                print!("{}", table(&head, &rows));
                return Ok(());
            }
            list
        }
        InvitationCommand::Accept { id } => client.post(&path(&id, "accept"), &json!({})).await?,
        InvitationCommand::Decline { id } => {
            client.post(&path(&id, "decline"), &json!({})).await?;
            json!({ "declined": id })
        }
    };
    if remote.json {
        return print_json(&result);
    }
    match result.get("declined") {
        Some(id) => println!("declined {}", clean(id.as_str().unwrap_or_default())),
        None => println!(
            "joined {} as {}",
            text(&result, "workspace"),
            text(&result, "role")
        ),
    }
    Ok(())
}

/// Runs a token command.
pub async fn tokens(remote: &Remote, command: TokenCommand) -> anyhow::Result<()> {
    let client = remote.connect()?;
    match command {
        TokenCommand::List => {
            let list = client.get("/api/v1/tokens").await?;
            if remote.json {
                return print_json(&list);
            }
            let rows: Vec<Vec<String>> = list
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| {
                    let state = if t["revoked_at"].is_null() {
                        "active"
                    } else {
                        "revoked"
                    };
                    let used = t["last_used_at"].as_str().unwrap_or("never");
                    vec![
                        text(t, "name"),
                        text(t, "prefix"),
                        state.to_owned(),
                        clean(used),
                        text(t, "id"),
                    ]
                })
                .collect();
            print!(
                "{}",
                table(&["NAME", "PREFIX", "STATE", "LAST USED", "ID"], &rows)
            );
        }
        TokenCommand::Create { name } => {
            create_token(&client, "/api/v1/tokens", &name, remote.json).await?
        }
        TokenCommand::Revoke { id } => {
            revoke_token(&client, "/api/v1/tokens", &id, remote.json).await?
        }
    }
    Ok(())
}

/// Creates a token at `collection` (API tokens, runner tokens) and prints its secret, once.
pub(crate) async fn create_token(
    client: &Client,
    collection: &str,
    name: &str,
    json: bool,
) -> anyhow::Result<()> {
    let created = client.post(collection, &json!({ "name": name })).await?;
    if json {
        return print_json(&created);
    }
    println!("{}", created["token"].as_str().unwrap_or_default());
    Ok(())
}

/// Revokes the token `id` of `collection`.
pub(crate) async fn revoke_token(
    client: &Client,
    collection: &str,
    id: &str,
    json: bool,
) -> anyhow::Result<()> {
    client
        .delete(&format!("{collection}/{}", segment(id)))
        .await?;
    if json {
        return print_json(&json!({ "revoked": id }));
    }
    println!("revoked {}", clean(id));
    Ok(())
}
