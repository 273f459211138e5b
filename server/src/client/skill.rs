//! `muster skill …`: list, show, import (a local folder or archive, uploaded), export, attach, detach.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::Subcommand;
use serde::Deserialize;
use serde_json::Value;

use super::output::{clean, print_json, table};
use super::{ApiError, Client, Remote, not_found_as, segment, shape};

/// What to do with skills.
#[derive(Debug, Subcommand)]
pub enum SkillCommand {
    /// List skills as a table (SKILL, SOURCE, AGENTS, DESCRIPTION).
    List,
    /// Show a skill: its SKILL.md and the names of its files.
    Show {
        /// The skill's name (slug), e.g. review-a-diff.
        slug: String,
    },
    /// Import a skill from a local folder (with SKILL.md) or a .zip/.skill archive; it is uploaded.
    Import {
        /// A folder or an archive on this machine.
        path: PathBuf,
    },
    /// Export a skill as a .zip.
    Export {
        /// The skill's name (slug).
        slug: String,
        /// Where to write it [default: ./<slug>.zip]; - for standard output.
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
    },
    /// Attach a skill to an agent (enabled), or enable it again.
    Attach {
        /// The agent's name.
        agent: String,
        /// The skill's name (slug).
        slug: String,
        /// Attach it switched off.
        #[arg(long)]
        disabled: bool,
    },
    /// Detach a skill from an agent.
    Detach {
        /// The agent's name.
        agent: String,
        /// The skill's name (slug).
        slug: String,
    },
}

#[derive(Debug, Deserialize)]
struct SkillRow {
    slug: String,
    source: String,
    description: String,
    #[serde(default)]
    agents: Vec<String>,
    #[serde(default)]
    body: String,
    #[serde(default)]
    files: Vec<FileRow>,
}

#[derive(Debug, Deserialize)]
struct FileRow {
    path: String,
}

/// Runs one `muster skill` command.
pub async fn run(remote: &Remote, command: SkillCommand) -> anyhow::Result<()> {
    let client = remote.connect()?;
    let json = remote.json;
    match command {
        SkillCommand::List => {
            let list = client.get("/api/v1/skills").await?;
            if json {
                return print_json(&list);
            }
            let rows: Vec<SkillRow> = shape(&list)?;
            let rows: Vec<Vec<String>> = rows
                .iter()
                .map(|s| {
                    vec![
                        clean(&s.slug),
                        s.source.replace('_', "-"),
                        clean(&s.agents.join(",")),
                        clean(&s.description),
                    ]
                })
                .collect();
            print!(
                "{}",
                table(&["SKILL", "SOURCE", "AGENTS", "DESCRIPTION"], &rows)
            );
            Ok(())
        }
        SkillCommand::Show { slug } => {
            let path = format!("/api/v1/skills/{}", segment(&slug));
            let skill = client.get(&path).await;
            let skill = skill.map_err(|e| not_found_as(e, &format!("skill {slug}")))?;
            if json {
                return print_json(&skill);
            }
            let s: SkillRow = shape(&skill)?;
            println!("{}", s.body.trim_end());
            if !s.files.is_empty() {
                println!("\nFiles:");
                for f in &s.files {
                    println!("  {}", clean(&f.path));
                }
            }
            Ok(())
        }
        SkillCommand::Import { path } => {
            let bytes = archive_bytes(&path)?;
            let skill = post_zip(&client, bytes).await?;
            let s: SkillRow = shape(&skill)?;
            done(json, &skill, || {
                format!("imported skill {}", clean(&s.slug))
            })
        }
        SkillCommand::Export { slug, output } => export(&client, &slug, output).await,
        SkillCommand::Attach {
            agent,
            slug,
            disabled,
        } => {
            let path = format!(
                "/api/v1/agents/{}/skills/{}",
                segment(&agent),
                segment(&slug)
            );
            let body = serde_json::json!({ "enabled": !disabled });
            let list = client
                .send(client.http.put(client.url(&path)).json(&body))
                .await;
            let list =
                list.map_err(|e| not_found_as(e, &format!("agent {agent} or skill {slug}")))?;
            let state = if disabled {
                "attached (disabled)"
            } else {
                "attached"
            };
            done(json, &list, || {
                format!("{} {state} to {}", clean(&slug), clean(&agent))
            })
        }
        SkillCommand::Detach { agent, slug } => {
            let path = format!(
                "/api/v1/agents/{}/skills/{}",
                segment(&agent),
                segment(&slug)
            );
            let list = client.send(client.http.delete(client.url(&path))).await;
            let list = list.map_err(|e| {
                not_found_as(
                    e,
                    &format!("agent {agent}, skill {slug} or that attachment"),
                )
            })?;
            done(json, &list, || {
                format!("{} detached from {}", clean(&slug), clean(&agent))
            })
        }
    }
}

fn done(json: bool, value: &Value, text: impl FnOnce() -> String) -> anyhow::Result<()> {
    if json {
        print_json(value)
    } else {
        println!("{}", text());
        Ok(())
    }
}

/// A folder is zipped here (links refused, limits checked); an archive is sent as it is.
fn archive_bytes(path: &Path) -> anyhow::Result<Vec<u8>> {
    let meta = std::fs::symlink_metadata(path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    if meta.is_dir() {
        return crate::skills::archive::folder_to_zip(path).map_err(|problems| {
            let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
            anyhow::anyhow!(
                "{} is not a valid skill:\n  {}",
                path.display(),
                lines.join("\n  ")
            )
        });
    }
    // An archive may be reached through a link (it is the caller's own file), but it must be a regular
    // file: reading a FIFO or a device would never end.
    let kind = std::fs::metadata(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .file_type();
    if !kind.is_file() {
        anyhow::bail!(
            "{} is {}; give a skill folder or a .zip/.skill archive",
            path.display(),
            crate::confined::kind_of(&kind)
        );
    }
    std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
}

async fn post_zip(client: &Client, bytes: Vec<u8>) -> anyhow::Result<Value> {
    let request = client
        .http
        .post(client.url("/api/v1/skills/import"))
        .header(reqwest::header::CONTENT_TYPE, "application/zip")
        .body(bytes);
    client.send(request).await
}

async fn export(client: &Client, slug: &str, output: Option<PathBuf>) -> anyhow::Result<()> {
    let path = format!("/api/v1/skills/{}/export", segment(slug));
    let response = client
        .http
        .get(client.url(&path))
        .bearer_auth(client.token().expose())
        .send()
        .await
        .with_context(|| format!("cannot reach the Muster server at {}", client.base()))?;
    let status = response.status();
    let body = response.bytes().await.context("reading the archive")?;
    if !status.is_success() {
        let e: anyhow::Error = ApiError::from_body(status, &body).into();
        return Err(not_found_as(e, &format!("skill {slug}")));
    }
    match output {
        Some(p) if p.as_os_str() == "-" => super::output::write_stdout_bytes(&body),
        other => {
            let file = other.unwrap_or_else(|| PathBuf::from(format!("{slug}.zip")));
            std::fs::write(&file, &body)
                .with_context(|| format!("cannot write {}", file.display()))?;
            eprintln!("wrote {}", file.display());
        }
    }
    Ok(())
}
