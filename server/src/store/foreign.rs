//! SQL on a file that is not Muster's: an agent CLI's own SQLite state (OpenCode keeps its sessions in
//! `opencode.db`), rewritten when a follow-up run carries a session into a new working directory.
//!
//! Invariant: the file came from an agent's `HOME`, so it is hostile input. A file with triggers or
//! views is refused (they would run SQL of the agent's choosing), `trusted_schema` is off, the work is
//! bounded by a timeout, and only text columns of plain tables are touched.

use std::path::Path;
use std::time::Duration;

use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions as _, Connection as _, Row as _};

/// The longest a rewrite may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Replaces `from` with `to` in every text value of every table of the SQLite file `db`. Paths of runs
/// have the same length, but nothing here depends on it.
pub async fn replace_text(db: &Path, from: &str, to: &str) -> Result<u64, String> {
    tokio::time::timeout(TIMEOUT, rewrite(db, from, to))
        .await
        .map_err(|_| format!("rewriting {} took over {TIMEOUT:?}", db.display()))?
        .map_err(|e| format!("cannot rewrite {}: {e}", db.display()))
}

async fn rewrite(db: &Path, from: &str, to: &str) -> Result<u64, sqlx::Error> {
    let mut conn = SqliteConnectOptions::new()
        .filename(db)
        .create_if_missing(false)
        .pragma("trusted_schema", "OFF")
        .connect()
        .await?;
    let schema = sqlx::query(
        "SELECT type, name FROM sqlite_master WHERE type IN ('table', 'trigger', 'view')",
    )
    .fetch_all(&mut conn)
    .await?;
    let mut tables = Vec::new();
    for row in &schema {
        let (kind, name): (String, String) = (row.try_get(0)?, row.try_get(1)?);
        if kind != "table" {
            return Err(sqlx::Error::Protocol(format!(
                "the file has a {kind} ({name}); refusing to write to it"
            )));
        }
        if !name.starts_with("sqlite_") {
            tables.push(name);
        }
    }
    let mut changed = 0;
    let mut tx = conn.begin().await?;
    for table in tables {
        let columns = sqlx::query("SELECT name, type FROM pragma_table_info(?1)")
            .bind(&table)
            .fetch_all(&mut *tx)
            .await?;
        for column in columns {
            let (name, kind): (String, String) = (column.try_get(0)?, column.try_get(1)?);
            if !kind.to_ascii_uppercase().contains("TEXT") {
                continue;
            }
            let sql = format!(
                "UPDATE {t} SET {c} = replace({c}, ?1, ?2) WHERE instr({c}, ?1) > 0",
                t = quoted(&table),
                c = quoted(&name)
            );
            // Audited: the only dynamic parts are the table's and column's names, quoted by `quoted`.
            changed += sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(from)
                .bind(to)
                .execute(&mut *tx)
                .await?
                .rows_affected();
        }
    }
    tx.commit().await?;
    conn.close().await?;
    Ok(changed)
}

/// An SQL identifier in double quotes, inner quotes doubled.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn exec(db: &Path, sql: &'static str) {
        let mut conn = SqliteConnectOptions::new()
            .filename(db)
            .create_if_missing(true)
            .connect()
            .await
            .unwrap();
        sqlx::raw_sql(sql).execute(&mut conn).await.unwrap();
        conn.close().await.unwrap();
    }

    #[tokio::test]
    async fn every_text_value_is_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("state.db");
        exec(
            &db,
            r#"CREATE TABLE "ses sion" (id TEXT PRIMARY KEY, directory TEXT, n INTEGER);
               INSERT INTO "ses sion" VALUES ('a', '/runs/1/work', 1), ('b', '/elsewhere', 2);
               CREATE TABLE event (data TEXT);
               INSERT INTO event VALUES ('{"cwd":"/runs/1/work/src"}');"#,
        )
        .await;
        assert_eq!(
            replace_text(&db, "/runs/1/work", "/runs/2/work").await,
            Ok(2)
        );
        let mut conn = SqliteConnectOptions::new()
            .filename(&db)
            .connect()
            .await
            .unwrap();
        let rows: Vec<(String, String)> =
            sqlx::query_as(r#"SELECT id, directory FROM "ses sion" ORDER BY id"#)
                .fetch_all(&mut conn)
                .await
                .unwrap();
        assert_eq!(
            rows,
            [
                ("a".to_owned(), "/runs/2/work".to_owned()),
                ("b".to_owned(), "/elsewhere".to_owned())
            ]
        );
        let data: String = sqlx::query_scalar("SELECT data FROM event")
            .fetch_one(&mut conn)
            .await
            .unwrap();
        assert_eq!(data, r#"{"cwd":"/runs/2/work/src"}"#);
    }

    /// An agent's file with a trigger would run SQL of its choosing on our write: refused, untouched.
    #[tokio::test]
    async fn a_file_with_a_trigger_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("state.db");
        exec(
            &db,
            "CREATE TABLE s (d TEXT); INSERT INTO s VALUES ('/runs/1/work');
             CREATE TABLE log (x TEXT);
             CREATE TRIGGER t AFTER UPDATE ON s BEGIN INSERT INTO log VALUES ('ran'); END;",
        )
        .await;
        let refused = replace_text(&db, "/runs/1/work", "/runs/2/work").await;
        assert!(
            refused.as_ref().is_err_and(|e| e.contains("trigger")),
            "{refused:?}"
        );
        let mut conn = SqliteConnectOptions::new()
            .filename(&db)
            .connect()
            .await
            .unwrap();
        let d: String = sqlx::query_scalar("SELECT d FROM s")
            .fetch_one(&mut conn)
            .await
            .unwrap();
        assert_eq!(d, "/runs/1/work");
    }
}
