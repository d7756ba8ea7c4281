//! The answer's meaning (table), and the client against a tiny HTTP server in the test:
//! a real answer, a bad query, an answer too large, no answer, nobody listening.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::{MAX_ANSWER_BYTES, Prometheus, encode_query_value, series_in};

#[test]
fn an_answer_counts_its_series_or_says_why_it_cannot() {
    let cases: Vec<(&str, &str, Result<usize, &str>)> = vec![
        (
            "two series",
            r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]},{"metric":{"a":"b"},"value":[1,"1"]}]}}"#,
            Ok(2),
        ),
        (
            "none",
            r#"{"status":"success","data":{"resultType":"vector","result":[]}}"#,
            Ok(0),
        ),
        (
            "a range query's matrix counts too",
            r#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[]}]}}"#,
            Ok(1),
        ),
        (
            "a scalar is not series",
            r#"{"status":"success","data":{"resultType":"scalar","result":[1,"1"]}}"#,
            Err("returns a scalar"),
        ),
        (
            "an error",
            r#"{"status":"error","errorType":"bad_data","error":"parse error at char 3"}"#,
            Err("parse error at char 3"),
        ),
        ("not JSON", "<html>proxy</html>", Err("not JSON")),
        (
            "no data",
            r#"{"status":"success"}"#,
            Err("no data.resultType"),
        ),
    ];
    for (what, body, want) in cases {
        let got = series_in(body.as_bytes());
        match (got, want) {
            (Ok(n), Ok(w)) => assert_eq!(n, w, "{what}"),
            (Err(e), Err(w)) => assert!(e.contains(w), "{what}: {e}"),
            (got, want) => panic!("{what}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn urls_and_queries() {
    assert!(
        Prometheus::parse("https://p:9090").is_err(),
        "https refused"
    );
    assert!(Prometheus::parse("not a url").is_err());
    let p = Prometheus::parse("http://10.0.0.1:9090/prom/").expect("url");
    assert_eq!(
        (p.authority.as_str(), p.prefix.as_str()),
        ("10.0.0.1:9090", "/prom")
    );
    let p = Prometheus::parse("http://prometheus").expect("url");
    assert_eq!(p.authority, "prometheus:80");
    assert_eq!(
        encode_query_value(r#"ALERTS{alertstate="firing"} == 1"#),
        "ALERTS%7Balertstate%3D%22firing%22%7D%20%3D%3D%201"
    );
}

/// Serves one connection: records the request line, answers with `status` and `body`
/// (or nothing at all when `status` is 0).
async fn serve_once(status: u16, body: String) -> (String, tokio::task::JoinHandle<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let task = tokio::spawn(async move {
        let Ok((mut stream, _)) = listener.accept().await else {
            return String::new();
        };
        let mut request = vec![0u8; 4096];
        let n = stream.read(&mut request).await.unwrap_or(0);
        let line = String::from_utf8_lossy(&request[..n])
            .lines()
            .next()
            .unwrap_or_default()
            .to_string();
        if status == 0 {
            // Never answer; hold the connection until the client gives up.
            let _ = stream.read(&mut request).await;
            return line;
        }
        let head = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        );
        let _ = stream.write_all(head.as_bytes()).await;
        let _ = stream.write_all(body.as_bytes()).await;
        line
    });
    (url, task)
}

#[tokio::test]
async fn the_client_asks_and_bounds_what_it_waits_for_and_reads() {
    let vector = r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]}]}}"#;
    let (url, server) = serve_once(200, vector.to_string()).await;
    let prometheus = Prometheus::parse(&format!("{url}/prom")).expect("url");
    assert_eq!(prometheus.series("vector(1)").await, Ok(1));
    let line = server.await.expect("server");
    assert_eq!(line, "GET /prom/api/v1/query?query=vector%281%29 HTTP/1.1");

    let bad = r#"{"status":"error","errorType":"bad_data","error":"unknown function vektor"}"#;
    let (url, _server) = serve_once(400, bad.to_string()).await;
    let answer = Prometheus::parse(&url)
        .expect("url")
        .series("vektor(1)")
        .await;
    assert!(
        answer
            .as_ref()
            .is_err_and(|e| e.contains("400") && e.contains("unknown function vektor")),
        "{answer:?}"
    );

    let huge = format!("{{\"pad\":\"{}\"}}", "x".repeat(MAX_ANSWER_BYTES + 10));
    let (url, _server) = serve_once(200, huge).await;
    let answer = Prometheus::parse(&url).expect("url").series("up").await;
    assert!(
        answer.as_ref().is_err_and(|e| e.contains("at most")),
        "{answer:?}"
    );

    let (url, _server) = serve_once(0, String::new()).await;
    let mut silent = Prometheus::parse(&url).expect("url");
    silent.timeout = Duration::from_millis(300);
    let answer = silent.series("up").await;
    assert!(
        answer
            .as_ref()
            .is_err_and(|e| e.contains("no answer within")),
        "{answer:?}"
    );

    let nobody = {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        format!("http://{}", listener.local_addr().expect("addr"))
    };
    let answer = Prometheus::parse(&nobody).expect("url").series("up").await;
    assert!(
        answer.as_ref().is_err_and(|e| e.contains("connecting to")),
        "{answer:?}"
    );
}
