//! Dates as a mail header writes them, without a calendar crate.

/// Seconds since the epoch, now.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// `Name <email> 1764624017 +0100` (git's ident) as the person, the time and the offset
/// in minutes.
pub fn split_ident(ident: &str) -> Option<(String, i64, i32)> {
    let (rest, tz) = ident.rsplit_once(' ')?;
    let (who, secs) = rest.rsplit_once(' ')?;
    let secs: i64 = secs.parse().ok()?;
    let sign = match tz.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let digits: i32 = tz.get(1..)?.parse().ok()?;
    let offset = sign * (digits / 100 * 60 + digits % 100);
    (who.contains('<') && who.ends_with('>')).then(|| (who.to_string(), secs, offset))
}

/// RFC 2822 (`Tue, 1 Dec 2026 21:20:17 +0000`) for a time and an offset in minutes.
pub fn rfc2822(secs: i64, offset_minutes: i32) -> String {
    let local = secs + i64::from(offset_minutes) * 60;
    let days = local.div_euclid(86_400);
    let of_day = local.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    // 1970-01-01 was a Thursday
    let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][days.rem_euclid(7) as usize];
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let sign = if offset_minutes < 0 { '-' } else { '+' };
    let off = offset_minutes.abs();
    format!(
        "{weekday}, {day} {} {year} {:02}:{:02}:{:02} {sign}{:02}{:02}",
        months[(month - 1) as usize],
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60,
        off / 60,
        off % 60
    )
}

/// Howard Hinnant's days-to-civil: the proleptic Gregorian date of a day since the epoch.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_as_git_writes_them() {
        assert_eq!(rfc2822(0, 0), "Thu, 1 Jan 1970 00:00:00 +0000");
        assert_eq!(rfc2822(1_796_160_017, 0), "Tue, 1 Dec 2026 21:20:17 +0000");
        assert_eq!(rfc2822(1_796_160_017, 60), "Tue, 1 Dec 2026 22:20:17 +0100");
        assert_eq!(
            rfc2822(1_796_160_017, -330),
            "Tue, 1 Dec 2026 15:50:17 -0530"
        );
        // a leap day
        assert_eq!(rfc2822(951_782_400, 0), "Tue, 29 Feb 2000 00:00:00 +0000");
    }

    #[test]
    fn git_ident_split() {
        assert_eq!(
            split_ident("Ada L <ada@example.org> 1796160017 -0530"),
            Some(("Ada L <ada@example.org>".to_string(), 1_796_160_017, -330))
        );
        assert_eq!(split_ident("no time"), None);
    }
}
