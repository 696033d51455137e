//! A lean HTTP/1.1 client (hyper's pooled client): one request, its status
//! and body, no more. Kept thin so the load generator spends little CPU of
//! its own on the two cores it shares with the server.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// A pooled keep-alive client.
#[derive(Clone)]
pub struct HttpClient {
    inner: Client<HttpConnector, Full<Bytes>>,
}

/// A completed response.
pub struct Reply {
    /// Status code.
    pub status: StatusCode,
    /// Whole body.
    pub body: Bytes,
}

impl HttpClient {
    /// A client keeping up to `max_idle` idle connections per server.
    pub fn new(max_idle: usize) -> Self {
        Self::build(max_idle, None)
    }

    /// [`HttpClient::new`], connecting from `local` (one client address of
    /// many on 127.0.0.0/8).
    pub fn with_local_address(max_idle: usize, local: std::net::IpAddr) -> Self {
        Self::build(max_idle, Some(local))
    }

    fn build(max_idle: usize, local: Option<std::net::IpAddr>) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_local_address(local);
        let inner = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(max_idle)
            .build(connector);
        Self { inner }
    }

    /// Sends one request; `body` is JSON when present.
    pub async fn send(
        &self,
        method: Method,
        url: &str,
        body: Option<Vec<u8>>,
        token: Option<&str>,
    ) -> anyhow::Result<Reply> {
        let mut builder = Request::builder().method(method).uri(url);
        if body.is_some() {
            builder = builder.header("content-type", "application/json");
        }
        if let Some(token) = token {
            builder = builder.header("authorization", format!("Bearer {token}"));
        }
        let request = builder.body(Full::new(Bytes::from(body.unwrap_or_default())))?;
        let response = self.inner.request(request).await?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        Ok(Reply { status, body })
    }
}
