//! Just enough HTTP/1.1 for the scripted endpoint: one request per connection (bodies by
//! `Content-Length` or chunked), JSON and SSE answers, every answer closes the connection.

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const MAX_HEADER: usize = 64 * 1024;
const MAX_BODY: usize = 32 * 1024 * 1024;

/// One parsed request.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub method: String,
    /// The path without its query string.
    pub path: String,
    /// Header names lower-cased, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Reads one request; `None` when the peer sent no complete head (or too much).
pub async fn read_request(sock: &mut TcpStream) -> std::io::Result<Option<Request>> {
    let mut buf = Vec::with_capacity(4096);
    let head_end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p;
        }
        if buf.len() > MAX_HEADER {
            return Ok(None);
        }
        let mut chunk = [0u8; 4096];
        let n = sock.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or_default().split_whitespace();
    let method = first.next().unwrap_or_default().to_string();
    let target = first.next().unwrap_or_default();
    let path = target.split('?').next().unwrap_or_default().to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut req = Request {
        method,
        path,
        headers,
        body: buf[head_end + 4..].to_vec(),
    };
    let chunked = req
        .header("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    if chunked {
        let Some(body) = read_chunked(sock, std::mem::take(&mut req.body)).await? else {
            return Ok(None);
        };
        req.body = body;
        return Ok(Some(req));
    }
    let len: usize = req
        .header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    if len > MAX_BODY {
        return Ok(None);
    }
    while req.body.len() < len {
        let mut chunk = vec![0u8; (len - req.body.len()).min(65536)];
        let n = sock.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        req.body.extend_from_slice(&chunk[..n]);
    }
    req.body.truncate(len);
    Ok(Some(req))
}

/// Decodes a chunked body, reading more from the socket as needed.
async fn read_chunked(sock: &mut TcpStream, mut raw: Vec<u8>) -> std::io::Result<Option<Vec<u8>>> {
    let mut body = Vec::new();
    let mut pos = 0usize;
    loop {
        // the size line
        let line_end = loop {
            if let Some(p) = raw[pos..].windows(2).position(|w| w == b"\r\n") {
                break pos + p;
            }
            if !fill(sock, &mut raw).await? {
                return Ok(None);
            }
        };
        let size_text = String::from_utf8_lossy(&raw[pos..line_end]).into_owned();
        let size_hex = size_text.split(';').next().unwrap_or_default().trim();
        let Ok(size) = usize::from_str_radix(size_hex, 16) else {
            return Ok(None);
        };
        pos = line_end + 2;
        if size == 0 {
            return Ok(Some(body));
        }
        if body.len() + size > MAX_BODY {
            return Ok(None);
        }
        while raw.len() < pos + size + 2 {
            if !fill(sock, &mut raw).await? {
                return Ok(None);
            }
        }
        body.extend_from_slice(&raw[pos..pos + size]);
        pos += size + 2;
    }
}

async fn fill(sock: &mut TcpStream, raw: &mut Vec<u8>) -> std::io::Result<bool> {
    let mut chunk = [0u8; 16384];
    let n = sock.read(&mut chunk).await?;
    raw.extend_from_slice(&chunk[..n]);
    Ok(n > 0)
}

pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Error",
    }
}

/// Writes one JSON answer and closes.
pub async fn write_json(sock: &mut TcpStream, status: u16, body: &Value) -> std::io::Result<()> {
    let body = body.to_string();
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        reason(status),
        body.len()
    );
    sock.write_all(head.as_bytes()).await?;
    sock.write_all(body.as_bytes()).await?;
    sock.flush().await?;
    let _ = sock.shutdown().await;
    Ok(())
}

/// Writes an empty answer (for `HEAD`) and closes.
pub async fn write_empty(sock: &mut TcpStream, status: u16) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        reason(status)
    );
    sock.write_all(head.as_bytes()).await?;
    sock.flush().await?;
    let _ = sock.shutdown().await;
    Ok(())
}

/// The head of an SSE answer (the body follows event by event, then the connection closes).
pub async fn write_sse_head(sock: &mut TcpStream) -> std::io::Result<()> {
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n";
    sock.write_all(head.as_bytes()).await?;
    sock.flush().await
}

/// `data: {json}\n\n`
pub fn sse_data(v: &Value) -> String {
    format!("data: {v}\n\n")
}

/// `event: NAME\ndata: {json}\n\n`
pub fn sse_event(name: &str, v: &Value) -> String {
    format!("event: {name}\ndata: {v}\n\n")
}
