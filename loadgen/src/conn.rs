//! One kept HTTP/1.1 connection of one caller, for the closed-loop capacity
//! runs. The generator shares the machine's cores with the server and
//! PostgreSQL, so what it spends per request is taken from what it measures:
//! a caller that owns its connection sends each request without a pool, URL
//! parsing or redirect policy (what `reqwest` adds), as pgbench's own client
//! does on its side of the comparison.

use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{HeaderValue, CONTENT_TYPE, COOKIE, HOST};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use serde_json::Value;

use crate::api::{Reply, SESSION_COOKIE};

/// A request that takes longer than this is a failure, not a hang of the run.
const TIMEOUT: Duration = Duration::from_secs(30);

pub struct Conn {
    /// `host:port` of the server.
    authority: String,
    host: HeaderValue,
    sender: Option<SendRequest<Full<Bytes>>>,
}

impl Conn {
    /// A connection to the server at `base` (`http://host:port`), opened on
    /// first use and again after the server closes it.
    pub fn new(base: &str) -> Result<Conn> {
        let authority = base.strip_prefix("http://").ok_or_else(|| anyhow!("not an http:// URL: {base}"))?.trim_end_matches('/').to_owned();
        let host = HeaderValue::from_str(&authority)?;
        Ok(Conn { authority, host, sender: None })
    }

    async fn open(&self) -> Result<SendRequest<Full<Bytes>>> {
        let stream = tokio::net::TcpStream::connect(&self.authority).await.with_context(|| format!("connecting to {}", self.authority))?;
        stream.set_nodelay(true)?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(async move {
            // Ends when the server or this side closes the connection.
            let _ = connection.await;
        });
        Ok(sender)
    }

    /// One request as the fan whose cookie is `session`; the answer's body
    /// parsed as JSON (Null when not JSON).
    pub async fn call(&mut self, method: Method, path: &str, session: &str, headers: &[(&str, &str)], body: Option<&Value>) -> Result<Reply> {
        if self.sender.as_ref().is_none_or(|s| s.is_closed()) {
            self.sender = Some(self.open().await?);
        }
        let sender = self.sender.as_mut().ok_or_else(|| anyhow!("no connection"))?;
        sender.ready().await?;
        let mut request =
            Request::builder().method(method).uri(path).header(HOST, self.host.clone()).header(COOKIE, format!("{SESSION_COOKIE}={session}"));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let payload = match body {
            Some(b) => {
                request = request.header(CONTENT_TYPE, "application/json");
                Bytes::from(serde_json::to_vec(b)?)
            }
            None => Bytes::new(),
        };
        let exchange = async {
            let response = sender.send_request(request.body(Full::new(payload))?).await?;
            let status = response.status().as_u16();
            let bytes = response.into_body().collect().await?.to_bytes();
            anyhow::Ok((status, bytes))
        };
        let (status, bytes) = match tokio::time::timeout(TIMEOUT, exchange).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(e)) => {
                self.sender = None;
                return Err(e);
            }
            Err(_) => {
                self.sender = None;
                return Err(anyhow!("no answer within {TIMEOUT:?}"));
            }
        };
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Ok(Reply { status, body, bytes: bytes.len() })
    }
}
