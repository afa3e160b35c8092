//! Who is asking: the client's address as the limits key it (an IPv6
//! client by its /64, the block one subscriber gets), taken from
//! `X-Forwarded-For` only when the connection comes from a configured
//! trusted proxy; and the caps on long-lived sockets per client.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use axum::extract::ConnectInfo;
use axum::http::request::Parts;
use axum::http::HeaderMap;

/// The key limits count by: an IPv4 address, or an IPv6 /64 (one
/// subscriber's block, which they can fill with addresses at will).
pub fn client_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

/// The client's address: the peer's, or, when the peer is a trusted proxy,
/// the last address in `X-Forwarded-For` that is not itself a trusted
/// proxy (the one the nearest trusted proxy saw). Anything else in that
/// header was written by the client and is ignored.
pub fn client_ip(peer: IpAddr, headers: &HeaderMap, trusted: &[IpAddr]) -> IpAddr {
    if !trusted.contains(&peer) {
        return peer;
    }
    let forwarded = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|a| a.trim().parse::<IpAddr>().ok())
        .collect::<Vec<_>>();
    forwarded.into_iter().rev().find(|a| !trusted.contains(a)).unwrap_or(peer)
}

/// The limits key of a request (None without connection info: in-process
/// calls in tests).
pub fn request_key(parts_extensions: &axum::http::Extensions, headers: &HeaderMap, trusted: &[IpAddr]) -> Option<IpAddr> {
    let peer = parts_extensions.get::<ConnectInfo<SocketAddr>>()?.0.ip();
    Some(client_key(client_ip(peer, headers, trusted)))
}

pub fn parts_key(parts: &Parts, trusted: &[IpAddr]) -> Option<IpAddr> {
    request_key(&parts.extensions, &parts.headers, trusted)
}

/// Counts of open sockets per key, capped; a [`SocketSlot`] gives its place
/// back when dropped.
#[derive(Clone, Default)]
pub struct SocketCaps {
    open: Arc<Mutex<HashMap<String, usize>>>,
}

pub struct SocketSlot {
    caps: SocketCaps,
    keys: Vec<String>,
}

impl SocketCaps {
    /// A place under every `(key, cap)`, or `None` if one is full.
    pub fn take(&self, limits: &[(String, usize)]) -> Option<SocketSlot> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if limits.iter().any(|(key, cap)| open.get(key).copied().unwrap_or(0) >= *cap) {
            return None;
        }
        for (key, _) in limits {
            *open.entry(key.clone()).or_default() += 1;
        }
        Some(SocketSlot { caps: self.clone(), keys: limits.iter().map(|(k, _)| k.clone()).collect() })
    }
}

impl Drop for SocketSlot {
    fn drop(&mut self) {
        let mut open = self.caps.open.lock().unwrap_or_else(|e| e.into_inner());
        for key in &self.keys {
            if let Some(n) = open.get_mut(key) {
                *n -= 1;
                if *n == 0 {
                    open.remove(key);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_clients_are_keyed_by_their_64() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        let other: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(client_key(a), client_key(b));
        assert_ne!(client_key(a), client_key(other));
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(client_key(mapped), "192.0.2.7".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn forwarded_addresses_count_only_behind_a_trusted_proxy() {
        let proxy: IpAddr = "10.0.0.5".parse().unwrap();
        let mut headers = HeaderMap::new();
        headers.insert("x-forwarded-for", "203.0.113.66, 198.51.100.7".parse().unwrap());
        let stranger: IpAddr = "192.0.2.1".parse().unwrap();
        assert_eq!(client_ip(stranger, &headers, &[proxy]), stranger, "a client cannot name its own address");
        assert_eq!(client_ip(proxy, &headers, &[proxy]), "198.51.100.7".parse::<IpAddr>().unwrap(), "the proxy's view, not the client's claim");
        assert_eq!(client_ip(proxy, &HeaderMap::new(), &[proxy]), proxy);
    }

    #[test]
    fn socket_caps_give_places_back() {
        let caps = SocketCaps::default();
        let limits = [("a".to_owned(), 2)];
        let one = caps.take(&limits).unwrap();
        let _two = caps.take(&limits).unwrap();
        assert!(caps.take(&limits).is_none());
        drop(one);
        assert!(caps.take(&limits).is_some());
    }
}
