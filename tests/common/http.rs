//! HTTP from the tests' side: a blocking client, and fake servers that
//! answer every request the same way (out of contract on purpose).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

/// A blocking client whose requests give up after 30 s.
pub fn client() -> reqwest::blocking::Client {
    specstorm::target::http::tls::install_provider();
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// Reads one HTTP/1.1 request (headers, then a Content-Length body);
/// returns its request line, or None once the connection is closed.
fn read_request(s: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) => buf.push(byte[0]),
            _ => return None,
        }
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    let len = head
        .to_ascii_lowercase()
        .lines()
        .find_map(|l| l.strip_prefix("content-length:").map(str::to_owned))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).ok()?;
    Some(head.lines().next().unwrap_or_default().to_owned())
}

/// A loopback server that answers every request `200` with the content
/// type and body `answer` gives for its request line; returns its port.
pub fn fake_server(answer: fn(&str) -> (&'static str, String)) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut s) = conn else { continue };
            std::thread::spawn(move || {
                while let Some(line) = read_request(&mut s) {
                    let (kind, body) = answer(&line);
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ncontent-length: {}\r\n\r\n",
                        body.len()
                    );
                    if s.write_all(head.as_bytes()).is_err()
                        || s.write_all(body.as_bytes()).is_err()
                    {
                        break;
                    }
                }
            });
        }
    });
    port
}

/// A server that answers every request with `200 hello`; its port.
pub fn garbage_server() -> u16 {
    fake_server(|_| ("text/plain", "hello".to_owned()))
}

/// Serves `app` on a loopback port from a thread of its own (a tokio
/// runtime with two workers, for the life of the test process); returns
/// its base URL.
pub fn serve_router(app: axum::Router) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(l.local_addr().unwrap()).unwrap();
            axum::serve(l, app).await.unwrap();
        });
    });
    format!("http://{}", rx.recv().unwrap())
}
