//! Sending email (tickets, sign-in codes) through a pluggable mailer. The
//! default writes each message to the log and appends it to a file, where
//! tests and operators read it; a deployment plugs in SMTP.

use std::path::PathBuf;

use async_trait::async_trait;
use serde::Serialize;

use crate::error::{EngineError, Result};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Mail {
    pub to: String,
    pub subject: String,
    pub body: String,
    /// Files sent with it (a ticket PDF, a calendar entry).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Attachment>,
    /// The same id on every attempt of one outbox mail, so a copy sent
    /// twice (a crash between sending and marking it sent) is recognisably
    /// the same message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
}

impl Mail {
    /// A plain text mail.
    pub fn text(to: impl Into<String>, subject: impl Into<String>, body: impl Into<String>) -> Self {
        Self { to: to.into(), subject: subject.into(), body: body.into(), attachments: Vec::new(), message_id: None }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Attachment {
    pub filename: String,
    pub content_type: String,
    /// The file outbox keeps it as base64.
    #[serde(serialize_with = "as_base64")]
    pub content: Vec<u8>,
}

fn as_base64<S: serde::Serializer>(bytes: &[u8], serializer: S) -> std::result::Result<S::Ok, S::Error> {
    use base64::Engine as _;
    serializer.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
}

#[async_trait]
pub trait Mailer: Send + Sync + 'static {
    async fn send(&self, mail: &Mail) -> Result<()>;
}

/// Logs every message and appends it, one JSON line each, to `outbox`.
pub struct FileMailer {
    outbox: Option<PathBuf>,
}

impl FileMailer {
    pub fn new(outbox: Option<PathBuf>) -> Self {
        Self { outbox }
    }
}

#[async_trait]
impl Mailer for FileMailer {
    async fn send(&self, mail: &Mail) -> Result<()> {
        tracing::info!(to = %mail.to, subject = %mail.subject, "mail (not sent: the file mailer keeps it)");
        let Some(path) = &self.outbox else { return Ok(()) };
        let mut line = serde_json::to_string(mail).map_err(|e| EngineError::Internal(format!("encoding a mail: {e}")))?;
        line.push('\n');
        use tokio::io::AsyncWriteExt;
        let mut file = tokio::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .await
            .map_err(|e| EngineError::Internal(format!("opening the outbox {}: {e}", path.display())))?;
        // A tokio file finishes writes in the background: without the flush
        // and sync the caller could answer before the mail is in the file.
        file.write_all(line.as_bytes()).await.map_err(|e| EngineError::Internal(format!("writing the outbox: {e}")))?;
        file.flush().await.map_err(|e| EngineError::Internal(format!("writing the outbox: {e}")))?;
        file.sync_data().await.map_err(|e| EngineError::Internal(format!("writing the outbox: {e}")))?;
        Ok(())
    }
}
