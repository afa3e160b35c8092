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

/// 12345 → "12,345".
pub fn grouped(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0 {
        out.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// How a section of the venue overview reads out, on the server and as
/// the live feed changes it: "Section 112, 340 of 2,000 available, from
/// €45.00", or for a standing area "Standing area FLOOR, 8,532 of 10,000
/// places left, €55.00".
pub fn section_label(name: &str, standing: bool, available: i64, total: i64, price_min_cents: i64) -> String {
    match (standing, available) {
        (true, 0) => format!("Standing area {name}, sold out"),
        (true, _) => format!("Standing area {name}, {} of {} places left, {}", grouped(available), grouped(total), money(price_min_cents)),
        (false, 0) => format!("Section {name}, sold out"),
        (false, _) => format!("Section {name}, {} of {} available, from {}", grouped(available), grouped(total), money(price_min_cents)),
    }
}

/// How full a section looks on the overview: 0 (nothing left) to 4 (more
/// than three quarters left), one shade each.
pub fn shade(available: i64, total: i64) -> u8 {
    if available <= 0 || total <= 0 {
        0
    } else {
        (1 + (available * 4 - 1) / total).min(4) as u8
    }
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
        "all_held" => ("Every seat is held right now: some may come back".to_owned(), "all-held"),
        "scheduled" => ("On sale soon".to_owned(), "upcoming"),
        "past" => ("Event over".to_owned(), "past"),
        "cancelled" => ("Cancelled".to_owned(), "cancelled"),
        _ if available * 10 < total => (format!("Selling fast: {} left", grouped(available)), "selling-fast"),
        _ => (format!("{} of {} seats available", grouped(available), grouped(total)), "available"),
    }
}

/// The event's cancellation terms as a fan reads them before paying and
/// on their booking, at `now`.
pub fn refund_terms(policy: &frontrow_model::RefundPolicy, starts_at: chrono::DateTime<chrono::Utc>, now: chrono::DateTime<chrono::Utc>) -> String {
    let Some(deadline) = policy.deadline(starts_at) else {
        return "Tickets cannot be cancelled online; ask the box office.".to_owned();
    };
    if deadline <= now {
        return format!("Tickets could be cancelled until {}; that time has passed.", deadline.format("%A %e %B %Y, %H:%M UTC"));
    }
    let fee = (policy.fee_cents > 0).then(|| format!("a {} fee per ticket", money(i64::from(policy.fee_cents))));
    let share = (policy.keep_percent > 0).then(|| format!("{}%", policy.keep_percent));
    let less = match (share, fee) {
        (None, None) => " in full".to_owned(),
        (Some(share), None) => format!(" less {share}"),
        (None, Some(fee)) => format!(" less {fee}"),
        (Some(share), Some(fee)) => format!(" less {share} and {fee}"),
    };
    format!("You can cancel tickets until {}: each ticket's price comes back{less}.", deadline.format("%A %e %B %Y, %H:%M UTC"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refund_terms_say_until_when_and_what_is_kept() {
        use frontrow_model::RefundPolicy;
        let start = chrono::DateTime::parse_from_rfc3339("2027-03-06T19:30:00Z").map(|t| t.to_utc()).unwrap();
        let before = start - chrono::Duration::days(7);
        let none = RefundPolicy::default();
        assert_eq!(refund_terms(&none, start, before), "Tickets cannot be cancelled online; ask the box office.");
        let free = RefundPolicy { cancel_until_hours: Some(48), ..none };
        assert_eq!(
            refund_terms(&free, start, before),
            "You can cancel tickets until Thursday  4 March 2027, 19:30 UTC: each ticket's price comes back in full."
        );
        assert_eq!(
            refund_terms(&free, start, start - chrono::Duration::hours(47)),
            "Tickets could be cancelled until Thursday  4 March 2027, 19:30 UTC; that time has passed."
        );
        let both = RefundPolicy { cancel_until_hours: Some(2), keep_percent: 10, fee_cents: 150 };
        let said = refund_terms(&both, start, before);
        assert!(said.ends_with("17:30 UTC: each ticket's price comes back less 10% and a €1.50 fee per ticket."), "{said}");
        assert_eq!(both.kept_of(4500), 600);
        assert_eq!(both.refund_of(4500), 3900);
        assert_eq!(both.kept_of(100), 100, "never more than the price");
        let share = RefundPolicy { cancel_until_hours: Some(0), keep_percent: 15, fee_cents: 0 };
        assert_eq!(share.kept_of(999), 150, "half a cent up rounds up");
        assert_eq!(share.refund_of(999), 849);
    }

    #[test]
    fn amounts_and_countdowns_read_naturally() {
        assert_eq!(amount(6500), "65.00");
        assert_eq!(amount(5), "0.05");
        assert_eq!(money(12500), "€125.00");
        assert_eq!(countdown(479_001), "8:00");
        assert_eq!(countdown(61_000), "1:01");
        assert_eq!(countdown(-5), "0:00");
        assert_eq!(grouped(1234567), "1,234,567");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(-1000), "-1,000");
    }

    #[test]
    fn sections_read_out_what_is_left_and_shade_by_it() {
        assert_eq!(section_label("112", false, 340, 2000, 4500), "Section 112, 340 of 2,000 available, from €45.00");
        assert_eq!(section_label("FLOOR", true, 0, 10, 100), "Standing area FLOOR, sold out");
        assert_eq!(shade(0, 100), 0);
        assert_eq!(shade(1, 100), 1);
        assert_eq!(shade(25, 100), 1);
        assert_eq!(shade(26, 100), 2);
        assert_eq!(shade(100, 100), 4);
    }
}
