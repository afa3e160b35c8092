//! What a buyer's mail says: the tickets (a PDF with a page per ticket and
//! its QR code, and a calendar entry), a refund, an event called off; and
//! what a fan on the waiting list is told when seats are offered to them.

use std::fmt::Write as _;

use chrono::{DateTime, Duration, Utc};
use frontrow_model::{BookingId, MailKind, SeatKind};
use pdf_writer::{Content, Finish, Name, Pdf, Rect, Ref, Str};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::mail::{Attachment, Mail};
use crate::error::{EngineError, Result};

/// The booking and its event, as a mail tells them.
struct About {
    to: String,
    holder: String,
    event_id: Uuid,
    event_name: String,
    venue: String,
    city: String,
    address: String,
    starts_at: DateTime<Utc>,
    doors_at: Option<DateTime<Utc>>,
}

/// A live ticket of the booking.
struct TicketLine {
    seat_id: String,
    code: String,
    price_cents: i32,
    section: String,
    row_label: String,
    number: i32,
    tier: String,
    kind: SeatKind,
    ticket_type: Option<String>,
}

impl TicketLine {
    /// Its ticket type (if the event has them) and tier: "Child, Front".
    fn sort(&self) -> String {
        match &self.ticket_type {
            Some(kind) => format!("{kind}, {}", self.tier),
            None => self.tier.clone(),
        }
    }

    fn place(&self) -> String {
        match self.kind {
            SeatKind::Standing => format!("Standing area {}", self.section),
            _ => format!("Section {}, row {}, seat {}", self.section, self.row_label, self.number),
        }
    }
}

/// Where the booking's mail goes: the address given at the counter, else
/// the buyer's account (a counter sale's account is the seller's: without
/// an address it has nobody to mail, and that is refused).
pub(crate) async fn recipient(conn: &mut PgConnection, booking_id: BookingId) -> Result<String> {
    let r = sqlx::query!(
        r#"SELECT coalesce(b.customer_email, u.email) AS "to!", (b.channel = 'online' OR b.customer_email IS NOT NULL) AS "mailable!"
             FROM bookings b JOIN users u USING (user_id) WHERE b.booking_id = $1"#,
        booking_id.as_uuid()
    )
    .fetch_optional(conn)
    .await?
    .ok_or(EngineError::NotFound)?;
    if !r.mailable {
        return Err(EngineError::invalid("this booking was sold at the counter without an email address: there is nobody to mail"));
    }
    Ok(r.to)
}

fn money(cents: i64) -> String {
    format!("€{}.{:02}", cents / 100, cents % 100)
}

/// The mail of `kind` about the booking, as things stand now (none: a
/// tickets mail for a booking with no valid ticket left).
pub(crate) async fn compose(pool: &PgPool, booking_id: BookingId, kind: MailKind, about: &str, site: &str) -> Result<Option<Mail>> {
    let b = sqlx::query_as!(
        About,
        r#"SELECT coalesce(b.customer_email, u.email) AS "to!", coalesce(b.customer_name, u.name) AS "holder!", e.event_id,
                  e.name AS event_name, e.venue, e.city, e.address, e.starts_at AS "starts_at: DateTime<Utc>",
                  e.doors_at AS "doors_at: DateTime<Utc>"
             FROM bookings b JOIN users u USING (user_id) JOIN events e USING (event_id) WHERE b.booking_id = $1"#,
        booking_id.as_uuid()
    )
    .fetch_optional(pool)
    .await?
    .ok_or(EngineError::NotFound)?;
    let link = format!("{site}/bookings/{booking_id}");
    match kind {
        MailKind::WaitlistOffer => Err(EngineError::Internal("an offer's mail names its entry, not a booking".into())),
        MailKind::Tickets => tickets_mail(pool, booking_id, &b, &link).await,
        MailKind::Refund | MailKind::EventCancelled => {
            let refund_id: Uuid = about.parse().map_err(|_| EngineError::Internal(format!("mail about {about:?} names no refund")))?;
            let r = sqlx::query!(
                r#"SELECT r.amount_cents, r.kept_cents, r.kind::text = 'fan' AS "by_fan!", coalesce(array_agg(t.seat_id ORDER BY t.seat_id) FILTER (WHERE t.seat_id IS NOT NULL), '{}') AS "seats!"
                     FROM refunds r LEFT JOIN tickets t ON t.ticket_id = ANY (r.ticket_ids)
                    WHERE r.refund_id = $1 GROUP BY r.refund_id"#,
                refund_id
            )
            .fetch_optional(pool)
            .await?
            .ok_or(EngineError::NotFound)?;
            let (subject, opening) = match kind {
                MailKind::EventCancelled => (
                    format!("{} is cancelled: your money is on its way back", b.event_name),
                    format!("We are sorry: {} on {} has been cancelled, and your tickets with it.", b.event_name, when(b.starts_at)),
                ),
                _ if r.by_fan => (format!("Cancelled: your tickets for {}", b.event_name), format!("You cancelled tickets for {}.", b.event_name)),
                _ => (format!("Refund for {}", b.event_name), format!("Your tickets for {} were cancelled as asked.", b.event_name)),
            };
            let mut body = format!("Hello {},\n\n{opening}\n\n", b.holder);
            match r.amount_cents {
                0 => writeln!(body, "Nothing was refunded for them (seats {}).", r.seats.join(", ")),
                amount => writeln!(body, "Refunded: {}, the way you paid (seats {}).", money(amount), r.seats.join(", ")),
            }
            .ok();
            if r.kept_cents > 0 {
                let _ = writeln!(body, "Under the event's cancellation terms the seller kept {}.", money(r.kept_cents));
            }
            let _ = write!(body, "\nYour booking: {link}\n");
            Ok(Some(Mail::text(b.to, subject, body)))
        }
    }
}

/// The mail offering seats to a fan on the waiting list (none: the offer
/// is no longer open).
pub(crate) async fn offer_mail(pool: &PgPool, entry_id: Uuid, site: &str) -> Result<Option<Mail>> {
    let o = sqlx::query!(
        r#"SELECT u.email, u.name, e.event_id, e.name AS event_name, e.venue, e.starts_at AS "starts_at: DateTime<Utc>",
                  h.expires_at AS "expires_at: DateTime<Utc>", h.total_cents, hold_live(h.state, h.expires_at) AS "open!",
                  array_agg(CASE WHEN s.kind = 'standing' THEN 'standing area ' || s.section
                                 ELSE 'section ' || s.section || ', row ' || s.row_label || ', seat ' || s.number END
                            ORDER BY s.position) AS "places!"
             FROM waitlist_entries w JOIN users u USING (user_id) JOIN events e USING (event_id)
             JOIN holds h ON h.hold_id = w.hold_id JOIN seats s ON s.event_id = h.event_id AND s.seat_id = ANY (h.seat_ids)
            WHERE w.entry_id = $1
            GROUP BY u.email, u.name, e.event_id, h.hold_id"#,
        entry_id
    )
    .fetch_optional(pool)
    .await?
    .ok_or(EngineError::NotFound)?;
    if !o.open {
        return Ok(None);
    }
    let subject = format!("Seats for {} are yours to buy until {}", o.event_name, o.expires_at.format("%H:%M UTC"));
    let body = format!(
        "Hello {},

Seats came back for {} at {} on {}, and you are next on its waiting list.

         We are keeping these for you until {}:
  {}
Total: {}

         Buy them here: {site}/events/{}

         After that they go to the next fan on the list. Not going? Decline them on the same page and they go on at once.
",
        o.name,
        o.event_name,
        o.venue,
        when(o.starts_at),
        when(o.expires_at),
        o.places.join(
            "
  "
        ),
        money(o.total_cents),
        o.event_id,
    );
    Ok(Some(Mail::text(o.email, subject, body)))
}

fn when(at: DateTime<Utc>) -> String {
    at.format("%A %e %B %Y, %H:%M UTC").to_string()
}

async fn tickets_mail(pool: &PgPool, booking_id: BookingId, b: &About, link: &str) -> Result<Option<Mail>> {
    let tickets = sqlx::query_as!(
        TicketLine,
        r#"SELECT t.seat_id, t.code, t.price_cents, s.section, s.row_label, s.number, s.tier, s.kind AS "kind: SeatKind", t.ticket_type
             FROM tickets t JOIN seats s USING (event_id, seat_id)
            WHERE t.booking_id = $1 AND t.state IN ('valid', 'checked_in')
            ORDER BY s.position"#,
        booking_id.as_uuid(),
    )
    .fetch_all(pool)
    .await?;
    if tickets.is_empty() {
        return Ok(None);
    }
    let place = [b.venue.as_str(), b.address.as_str(), b.city.as_str()].into_iter().filter(|p| !p.is_empty()).collect::<Vec<_>>().join(", ");
    let mut body = format!("Hello {},\n\nhere are your tickets for {}.\n\n", b.holder, b.event_name);
    let _ = writeln!(body, "When: {}", when(b.starts_at));
    if let Some(doors) = b.doors_at {
        let _ = writeln!(body, "Doors open: {}", doors.format("%H:%M UTC"));
    }
    let _ = writeln!(body, "Where: {place}\n");
    for t in &tickets {
        let _ = writeln!(body, "  {} ({}, {}): ticket code {}", t.place(), t.sort(), money(i64::from(t.price_cents)), t.code);
    }
    let _ = write!(body, "\nShow the attached PDF (a page per ticket) at the door, on paper or on your phone.\nYour booking: {link}\n");
    let mut mail = Mail::text(b.to.clone(), format!("Your tickets for {}", b.event_name), body);
    mail.attachments = vec![
        Attachment { filename: "tickets.pdf".into(), content_type: "application/pdf".into(), content: tickets_pdf(b, &place, &tickets) },
        Attachment { filename: "event.ics".into(), content_type: "text/calendar; charset=utf-8".into(), content: calendar_entry(b, &place, link) },
    ];
    Ok(Some(mail))
}

/// The event in the buyer's calendar: three hours from the start (the
/// length of an evening; events carry no end time).
fn calendar_entry(b: &About, place: &str, link: &str) -> Vec<u8> {
    use icalendar::{Calendar, Component, EventLike};
    let event = icalendar::Event::new()
        .uid(&format!("{}@frontrow", b.event_id))
        .summary(&b.event_name)
        .starts(b.starts_at)
        .ends(b.starts_at + Duration::hours(3))
        .location(place)
        .description(&format!("Your booking: {link}"))
        .done();
    Calendar::new().push(event).done().to_string().into_bytes()
}

/// Text for a standard PDF font (WinAnsi): what it cannot show becomes `?`.
fn win_ansi(text: &str) -> Vec<u8> {
    text.chars()
        .map(|c| match c {
            ' '..='~' => c as u8,
            '€' => 0x80,
            '–' => 0x96,
            '—' => 0x97,
            '\u{a0}'..='\u{ff}' => c as u32 as u8,
            _ => b'?',
        })
        .collect()
}

/// One A4 page per ticket: the event, the place, the holder and the code,
/// with its QR code large enough to scan from a phone.
fn tickets_pdf(b: &About, place: &str, tickets: &[TicketLine]) -> Vec<u8> {
    let mut pdf = Pdf::new();
    let catalog = Ref::new(1);
    let tree = Ref::new(2);
    let regular = Ref::new(3);
    let bold = Ref::new(4);
    let page_ids: Vec<Ref> = (0..tickets.len()).map(|i| Ref::new(5 + 2 * i as i32)).collect();
    pdf.catalog(catalog).pages(tree);
    pdf.pages(tree).kids(page_ids.iter().copied()).count(tickets.len() as i32);
    pdf.type1_font(regular).base_font(Name(b"Helvetica")).encoding_predefined(Name(b"WinAnsiEncoding"));
    pdf.type1_font(bold).base_font(Name(b"Helvetica-Bold")).encoding_predefined(Name(b"WinAnsiEncoding"));
    for (i, (ticket, &page_id)) in tickets.iter().zip(&page_ids).enumerate() {
        let content_id = Ref::new(6 + 2 * i as i32);
        let mut page = pdf.page(page_id);
        page.media_box(Rect::new(0.0, 0.0, 595.0, 842.0)).parent(tree).contents(content_id);
        page.resources().fonts().pair(Name(b"F1"), regular).pair(Name(b"F2"), bold);
        page.finish();

        let mut c = Content::new();
        let line = |c: &mut Content, font: &[u8], size: f32, y: f32, text: &str| {
            c.begin_text().set_font(Name(font), size).next_line(56.0, y).show(Str(&win_ansi(text))).end_text();
        };
        line(&mut c, b"F1", 11.0, 780.0, &format!("Ticket {} of {}", i + 1, tickets.len()));
        line(&mut c, b"F2", 24.0, 745.0, &b.event_name);
        line(&mut c, b"F1", 13.0, 718.0, &when(b.starts_at));
        if let Some(doors) = b.doors_at {
            line(&mut c, b"F1", 13.0, 700.0, &format!("Doors open {}", doors.format("%H:%M UTC")));
        }
        line(&mut c, b"F1", 13.0, 682.0, place);
        line(&mut c, b"F2", 18.0, 640.0, &ticket.place());
        line(&mut c, b"F1", 13.0, 618.0, &format!("{} · {}", ticket.sort(), money(i64::from(ticket.price_cents))));
        line(&mut c, b"F1", 13.0, 598.0, &format!("Holder: {}", b.holder));
        draw_qr(&mut c, &ticket.code, 56.0, 330.0, 240.0);
        line(&mut c, b"F2", 14.0, 300.0, &ticket.code);
        line(&mut c, b"F1", 10.0, 282.0, &format!("Seat {} · one entry per ticket", ticket.seat_id));
        pdf.stream(content_id, &c.finish());
    }
    pdf.finish()
}

/// The ticket code's QR code as black squares, `size` points wide, its
/// lower left corner at (`x`, `y`).
fn draw_qr(c: &mut Content, code: &str, x: f32, y: f32, size: f32) {
    let Ok(qr) = qrcode::QrCode::new(code.as_bytes()) else { return };
    let width = qr.width();
    let module = size / width as f32;
    let colors = qr.to_colors();
    c.set_fill_gray(0.0);
    for (k, color) in colors.iter().enumerate() {
        if *color == qrcode::Color::Dark {
            let (col, row) = (k % width, k / width);
            c.rect(x + col as f32 * module, y + size - (row + 1) as f32 * module, module, module);
        }
    }
    c.fill_nonzero();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn about() -> About {
        let starts_at = DateTime::parse_from_rfc3339("2031-06-01T19:30:00Z").map(|t| t.with_timezone(&Utc)).unwrap_or_default();
        About {
            to: "fan@example.test".into(),
            holder: "Zoë Fan".into(),
            event_id: Uuid::nil(),
            event_name: "Hamlet – the play".into(),
            venue: "Old Quay".into(),
            city: "London".into(),
            address: "12 Quay Street".into(),
            starts_at,
            doors_at: Some(starts_at - Duration::hours(1)),
        }
    }

    fn ticket(seat: &str, kind: SeatKind) -> TicketLine {
        TicketLine {
            seat_id: seat.into(),
            code: "0123456789ABCDEF01234567".into(),
            price_cents: 4850,
            section: "A".into(),
            row_label: "1".into(),
            number: 2,
            tier: "Front".into(),
            kind,
            ticket_type: Some("Child".into()),
        }
    }

    #[test]
    fn the_pdf_has_a_page_per_ticket_with_its_place_and_the_calendar_entry_the_event() {
        let tickets = [ticket("A-1-2", SeatKind::Standard), ticket("FLOOR-1", SeatKind::Standing)];
        let pdf = tickets_pdf(&about(), "Old Quay, London", &tickets);
        let text = String::from_utf8_lossy(&pdf);
        assert!(pdf.starts_with(b"%PDF-"));
        assert_eq!(text.matches("/Type /Page\n").count() + text.matches("/Type /Page ").count() + text.matches("/Type /Page/").count(), 2, "{text}");
        assert!(text.contains("(Section A, row 1, seat 2)"));
        assert!(text.contains("(Standing area A)"));
        // Not plain ASCII: written as a hex string, ë as WinAnsi's 0xEB.
        let holder: String = b"Holder: Zo\xeb Fan".iter().map(|b| format!("{b:02X}")).collect();
        assert!(text.to_uppercase().contains(&holder), "Latin letters survive");
        let ics = String::from_utf8(calendar_entry(&about(), "Old Quay, London", "https://x.test/bookings/1")).unwrap_or_default();
        assert!(ics.contains("BEGIN:VEVENT") && ics.contains("DTSTART:20310601T193000Z") && ics.contains("LOCATION:Old Quay\\, London"), "{ics}");
    }

    #[test]
    fn what_a_standard_font_cannot_show_becomes_a_question_mark() {
        assert_eq!(win_ansi("€5 – Zoë 日"), b"\x805 \x96 Zo\xeb ?".to_vec());
    }
}
