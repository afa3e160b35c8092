//! How amounts and times read on the page; the same on server and browser so
//! hydration sees identical text.

/// 6500 → "65.00".
pub fn amount(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let cents = cents.unsigned_abs();
    format!("{sign}{}.{:02}", cents / 100, cents % 100)
}

/// 6500 → "€65.00".
pub fn money(cents: i64) -> String {
    format!("€{}", amount(cents))
}

/// Milliseconds left → "7:59" (never negative).
pub fn countdown(ms: i64) -> String {
    let secs = (ms.max(0) + 999) / 1000;
    format!("{}:{:02}", secs / 60, secs % 60)
}

/// The availability line of an event, and its style class; the server and
/// the seat picker (as seats change live) say it in the same words.
pub fn availability(status: &str, available: i64, total: i64) -> (String, &'static str) {
    match status {
        "sold_out" => ("Sold out".to_owned(), "sold-out"),
        "scheduled" => ("On sale soon".to_owned(), "upcoming"),
        "past" => ("Event over".to_owned(), "past"),
        "cancelled" => ("Cancelled".to_owned(), "cancelled"),
        _ if available * 10 < total => (format!("Selling fast: {available} left"), "selling-fast"),
        _ => (format!("{available} of {total} seats available"), "available"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_and_countdowns_read_naturally() {
        assert_eq!(amount(6500), "65.00");
        assert_eq!(amount(5), "0.05");
        assert_eq!(money(12500), "€125.00");
        assert_eq!(countdown(479_001), "8:00");
        assert_eq!(countdown(61_000), "1:01");
        assert_eq!(countdown(-5), "0:00");
    }
}
