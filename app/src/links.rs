//! Where the app may send a fan.

/// Where sign-in should return to: only paths on this site (browsers read
/// `//host`, `/\host` and paths with control characters as other sites).
pub fn safe_next(next: Option<String>) -> String {
    next.filter(|n| n.starts_with('/') && !n.starts_with("//") && !n.chars().any(|c| c == '\\' || c.is_control() || c.is_whitespace()))
        .unwrap_or_else(|| "/account".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paths_on_this_site_are_followed() {
        assert_eq!(safe_next(Some("/events/1".into())), "/events/1");
        for bad in ["//evil.example", "/\\evil.example", "https://evil.example", "/a b", "/a\u{7}"] {
            assert_eq!(safe_next(Some(bad.into())), "/account", "{bad:?}");
        }
        assert_eq!(safe_next(None), "/account");
    }
}
