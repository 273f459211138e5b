use super::proxy::parse;
use super::*;

fn list(hosts: &[&str]) -> AllowList {
    AllowList {
        hosts: hosts
            .iter()
            .map(|h| HostPattern::parse_field("egress_hosts", h).unwrap())
            .collect(),
        endpoints: vec![("api.example.com".to_owned(), 8443)],
        no_network: false,
    }
}

#[test]
fn the_list_allows_its_hosts_and_the_model_endpoint_only() {
    let allow = list(&["github.com", "*.npmjs.org"]);
    assert_eq!(allow.refusal("github.com", 443), None);
    assert_eq!(allow.refusal("registry.npmjs.org", 443), None);
    assert_eq!(allow.refusal("api.example.com", 8443), None);
    let why = allow.refusal("evil.example", 443).unwrap();
    assert!(
        why.contains("evil.example:443 is not on the agent's egress allow-list"),
        "{why}"
    );
    assert!(allow.refusal("api.example.com", 443).is_some());
    let off = AllowList {
        no_network: true,
        ..allow
    };
    assert!(
        off.refusal("github.com", 443)
            .unwrap()
            .contains("no network")
    );
    assert_eq!(off.refusal("api.example.com", 8443), None);
    assert_eq!(off.describe(), "no network; always api.example.com:8443");
}

#[test]
fn request_heads_parse_into_a_host_and_port() {
    let r = parse(b"CONNECT github.com:443 HTTP/1.1\r\nHost: github.com:443\r\n\r\n").unwrap();
    assert_eq!(
        (r.method.as_str(), r.host.as_str(), r.port),
        ("CONNECT", "github.com", 443)
    );
    assert!(r.forward.is_none());
    let r = parse(
        b"GET http://Allowed.test/x?y=1 HTTP/1.1\r\nHost: allowed.test\r\nProxy-Connection: keep-alive\r\n\r\n",
    )
    .unwrap();
    assert_eq!((r.host.as_str(), r.port), ("allowed.test", 80));
    let forward = String::from_utf8(r.forward.unwrap()).unwrap();
    assert_eq!(
        forward,
        "GET /x?y=1 HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n"
    );
    assert!(
        parse(b"CONNECT github.com HTTP/1.1\r\n\r\n")
            .unwrap_err()
            .contains("needs a port")
    );
    assert!(
        parse(b"GET /x HTTP/1.1\r\n\r\n")
            .unwrap_err()
            .contains("absolute")
    );
    assert!(
        parse(b"GET https://x/ HTTP/1.1\r\n\r\n")
            .unwrap_err()
            .contains("CONNECT")
    );
    assert!(parse(b"CONNECT a b:1 HTTP/1.1\r\n\r\n").is_err());
}

#[test]
fn urls_give_their_endpoint() {
    assert_eq!(
        url_endpoint("https://u:p@API.example.com/v1"),
        Some(("api.example.com".to_owned(), 443))
    );
    assert_eq!(
        url_endpoint("http://[::1]:8080"),
        Some(("::1".to_owned(), 8080))
    );
    assert!(is_loopback("127.0.0.1") && is_loopback("localhost") && is_loopback("[::1]"));
    assert!(!is_loopback("example.com"));
}

#[test]
fn connection_errors_are_told_from_others() {
    assert!(about_connecting(
        "API Error: Unable to connect to API (FailedToOpenSocket)"
    ));
    assert!(about_connecting(
        "curl: (56) CONNECT tunnel failed, response 403"
    ));
    assert!(!about_connecting("model gpt-9 does not exist"));
}
