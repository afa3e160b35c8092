//! Mail over SMTP, for deployments (the engine's default mailer only logs
//! and files its messages). Configured by an `smtp://` or `smtps://` URL
//! with the credentials in it, read from the environment only.

use async_trait::async_trait;
use frontrow_engine::accounts::mail::{Mail, Mailer};
use frontrow_engine::EngineError;
use lettre::message::header::ContentType;
use lettre::message::{Attachment, Mailbox, MultiPart, SinglePart};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

pub struct SmtpMailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

impl SmtpMailer {
    /// `url`: e.g. `smtps://user:password@mail.example.com` (TLS) or
    /// `smtp://user:password@mail.example.com?tls=required` (STARTTLS).
    pub fn new(url: &str, from: &str) -> anyhow::Result<Self> {
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
            .map_err(|e| anyhow::anyhow!("FRONTROW_SMTP_URL: {e}"))?
            .timeout(Some(std::time::Duration::from_secs(10)))
            .build();
        let from = from.parse().map_err(|e| anyhow::anyhow!("FRONTROW_MAIL_FROM: {e}"))?;
        Ok(Self { transport, from })
    }
}

#[async_trait]
impl Mailer for SmtpMailer {
    async fn send(&self, mail: &Mail) -> Result<(), EngineError> {
        let to: Mailbox = mail.to.parse().map_err(|e| EngineError::invalid(format!("cannot mail {}: {e}", mail.to)))?;
        let builder = Message::builder().from(self.from.clone()).to(to).subject(&mail.subject).message_id(mail.message_id.clone());
        let built = if mail.attachments.is_empty() {
            builder.body(mail.body.clone())
        } else {
            let mut parts = MultiPart::mixed().singlepart(SinglePart::plain(mail.body.clone()));
            for file in &mail.attachments {
                let content_type =
                    ContentType::parse(&file.content_type).map_err(|e| EngineError::Internal(format!("content type {}: {e}", file.content_type)))?;
                parts = parts.singlepart(Attachment::new(file.filename.clone()).body(file.content.clone(), content_type));
            }
            builder.multipart(parts)
        };
        let message = built.map_err(|e| EngineError::Internal(format!("building a mail: {e}")))?;
        self.transport.send(message).await.map_err(|e| {
            tracing::warn!(to = %mail.to, error = %e, "SMTP send failed");
            EngineError::MailUnavailable(e.to_string())
        })?;
        tracing::info!(to = %mail.to, subject = %mail.subject, "mail sent");
        Ok(())
    }
}
