use std::sync::Arc;

use jiff::Timestamp;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

use super::*;
use crate::certgen::{self, CA_CRT, SecretData, TLS_CRT, TLS_KEY};
use crate::tls_test_support::{connect, material, provider};

/// An echo server over TLS with `store` as resolver: every accepted connection echoes
/// what it reads until the client closes.
async fn echo_server(store: Arc<CertStore>) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    let config = server_config(store, provider()).expect("server config");
    let acceptor = TlsAcceptor::from(Arc::new(config));
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut buf = [0u8; 64];
                while let Ok(n) = tls.read(&mut buf).await {
                    if n == 0 || tls.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

async fn echo(tls: &mut tokio_rustls::client::TlsStream<TcpStream>, text: &[u8]) -> Vec<u8> {
    tls.write_all(text).await.expect("write");
    let mut buf = vec![0u8; text.len()];
    tls.read_exact(&mut buf).await.expect("read");
    buf
}

fn leaf_der(data: &SecretData) -> Vec<u8> {
    certgen::der_certificates(&data[TLS_CRT]).remove(0)
}

#[tokio::test]
async fn a_swapped_certificate_serves_new_connections_and_keeps_open_ones() {
    let first = material();
    let second = material();
    let store = Arc::new(CertStore::new(provider()));
    assert!(!store.is_loaded());
    let addr = echo_server(store.clone()).await;

    assert!(
        connect(addr, &[&first[CA_CRT]]).await.is_err(),
        "no certificate yet: the handshake fails"
    );

    let loaded = store.offer(&first[TLS_CRT], &first[TLS_KEY], "first", "first");
    assert!(matches!(loaded, Ok(true)));
    assert!(store.is_loaded());
    let (mut open, served) = connect(addr, &[&first[CA_CRT]])
        .await
        .expect("first handshake");
    assert_eq!(served, leaf_der(&first));

    let swapped = store.offer(&second[TLS_CRT], &second[TLS_KEY], "second", "second");
    assert!(matches!(swapped, Ok(true)));
    let (_, served) = connect(addr, &[&first[CA_CRT], &second[CA_CRT]])
        .await
        .expect("second handshake");
    assert_eq!(
        served,
        leaf_der(&second),
        "a new connection gets the new leaf"
    );
    assert_eq!(
        echo(&mut open, b"still here").await,
        b"still here",
        "the connection opened before the swap keeps working"
    );

    let again = store.offer(&second[TLS_CRT], &second[TLS_KEY], "second", "second");
    assert!(matches!(again, Ok(false)), "same bytes: no swap");
}

#[tokio::test]
async fn a_broken_pair_is_refused_and_the_previous_certificate_stays() {
    let good = material();
    let other = material();
    let store = Arc::new(CertStore::new(provider()));
    store
        .offer(&good[TLS_CRT], &good[TLS_KEY], "good", "good")
        .expect("loads");
    let cases: [(&str, &[u8], &[u8]); 3] = [
        ("mismatched key", &good[TLS_CRT], &other[TLS_KEY]),
        ("no certificate", b"", &good[TLS_KEY]),
        ("garbage key", &good[TLS_CRT], b"garbage"),
    ];
    for (name, cert, key) in cases {
        assert!(store.offer(cert, key, "c", "k").is_err(), "{name}");
    }
    let addr = echo_server(store.clone()).await;
    let (_, served) = connect(addr, &[&good[CA_CRT]]).await.expect("handshake");
    assert_eq!(served, leaf_der(&good));
}

#[test]
fn expiry_is_read_from_the_served_leaf() {
    let data = material();
    let store = CertStore::new(provider());
    assert_eq!(store.not_after(), None);
    store
        .offer(&data[TLS_CRT], &data[TLS_KEY], "c", "k")
        .expect("loads");
    let expected = Timestamp::now().as_second() + 24 * 3600;
    let got = store.not_after().expect("expiry read");
    assert!((got - expected).abs() <= 5, "{got} vs {expected}");
    let metrics = Metrics::new().expect("metrics");
    store.record(&metrics);
    assert_eq!(metrics.certificate_expiry.get(), got);
}

#[test]
fn file_source_reloads_changed_files_only() {
    let dir = std::env::temp_dir().join(format!("lifeguard-certs-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let source = FileSource {
        cert_path: dir.join("tls.crt"),
        key_path: dir.join("tls.key"),
    };
    let store = CertStore::new(provider());
    assert!(source.load_into(&store).is_err(), "missing files");
    let first = material();
    std::fs::write(&source.cert_path, &first[TLS_CRT]).expect("write");
    std::fs::write(&source.key_path, &first[TLS_KEY]).expect("write");
    assert!(matches!(source.load_into(&store), Ok(true)));
    assert!(matches!(source.load_into(&store), Ok(false)));
    let second = material();
    std::fs::write(&source.cert_path, &second[TLS_CRT]).expect("write");
    assert!(
        source.load_into(&store).is_err(),
        "half-written pair refused"
    );
    std::fs::write(&source.key_path, &second[TLS_KEY]).expect("write");
    assert!(matches!(source.load_into(&store), Ok(true)));
    let _ = std::fs::remove_dir_all(&dir);
}
