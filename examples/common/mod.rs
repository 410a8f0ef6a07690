//! What the figure examples share (`gossip_figures`, `compare`): reading
//! results files, and line charts drawn with `plotters` into SVG.
// Each example uses a part of this module.
#![allow(dead_code)]

use std::error::Error;
use std::fs;
use std::path::Path;

use plotters::prelude::*;
use serde_json::Value;

pub type Res<T> = Result<T, Box<dyn Error>>;

pub const OUT: &str = "docs/figures";
pub const SIZE: (u32, u32) = (720, 480);
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(0, 0, 0),
    RGBColor(127, 127, 127),
];

/// The JSON lines of `path`, or `None` if it does not exist.
pub fn read_lines(path: &str) -> Res<Option<Vec<Value>>> {
    if !Path::new(path).exists() {
        return Ok(None);
    }
    let text = fs::read_to_string(path)?;
    let rows = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<Vec<Value>, _>>()?;
    Ok(Some(rows))
}

pub fn num(v: &Value, path: &[&str]) -> Option<f64> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_f64()
}

/// One line of a chart: its name, color, dashed or not, and points.
pub struct Line {
    pub name: String,
    pub color: RGBColor,
    pub dashed: bool,
    pub points: Vec<(f64, f64)>,
}

/// A line chart of `lines` in its own SVG file `file`.
pub fn chart(file: &str, title: &str, x: Axis, y_label: &str, lines: &[Line]) -> Res<()> {
    fs::create_dir_all(OUT)?;
    let path = format!("{OUT}/{file}");
    let root = SVGBackend::new(&path, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    plot(
        &root,
        title,
        x,
        y_label,
        lines,
        SeriesLabelPosition::UpperLeft,
    )?;
    root.present()?;
    println!("wrote {path}");
    Ok(())
}

/// How the x axis is labelled: plain numbers, log2 N values shown as N, or
/// the positions 0, 1, ... of named categories shown by name.
#[derive(Clone, Copy)]
pub struct Axis {
    label: &'static str,
    log2: bool,
    names: &'static [&'static str],
}

impl Axis {
    /// Plain numbers.
    pub fn plain(label: &'static str) -> Self {
        Axis {
            label,
            log2: false,
            names: &[],
        }
    }

    /// x is log2 N, shown as N.
    pub fn log2(label: &'static str) -> Self {
        Axis {
            log2: true,
            ..Axis::plain(label)
        }
    }

    /// x is the position of a category in `names`, shown by its name.
    pub fn named(label: &'static str, names: &'static [&'static str]) -> Self {
        Axis {
            names,
            ..Axis::plain(label)
        }
    }
}

/// Draws `lines` into `area`.
pub fn plot<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    x: Axis,
    y_label: &str,
    lines: &[Line],
    legend: SeriesLabelPosition,
) -> Res<()>
where
    DB::ErrorType: 'static,
{
    let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, 0.0f64);
    for &(px, py) in lines.iter().flat_map(|l| l.points.iter()) {
        x0 = x0.min(px);
        x1 = x1.max(px);
        y1 = y1.max(py);
    }
    if x0 >= x1 {
        return Ok(());
    }
    // A legend at the top gets room above the data: 7 % of the height
    // per entry, about what an entry takes.
    let top = match legend {
        SeriesLabelPosition::UpperLeft
        | SeriesLabelPosition::UpperMiddle
        | SeriesLabelPosition::UpperRight => 1.1 + 0.07 * lines.len() as f64,
        _ => 1.08,
    };
    let mut c = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .margin_right(28)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(x0..x1, 0.0..(y1 * top).max(1.0))?;
    let x_fmt = |v: &f64| {
        if !x.names.is_empty() {
            let i = v.round();
            match x.names.get(i as usize) {
                Some(name) if (v - i).abs() < 1e-6 && i >= 0.0 => name.to_string(),
                _ => String::new(),
            }
        } else if x.log2 {
            format!("{}", 2f64.powf(*v).round() as u64)
        } else {
            format!("{v:.0}")
        }
    };
    let ticks = (x1 - x0).round() as usize + 1;
    c.configure_mesh()
        .x_desc(x.label)
        .y_desc(y_label)
        .x_labels(ticks.min(17))
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&|v| format!("{v:.0}"))
        .draw()?;
    for l in lines {
        // Solid (simulated) lines wider than dashed (analytic) ones, so a
        // formula drawn over a simulation equal to it leaves both visible.
        let style = ShapeStyle::from(&l.color).stroke_width(if l.dashed { 2 } else { 3 });
        let anno = if l.dashed {
            c.draw_series(DashedLineSeries::new(l.points.iter().copied(), 6, 4, style))?
        } else {
            c.draw_series(LineSeries::new(l.points.iter().copied(), style))?
        };
        let (color, dashed) = (l.color, l.dashed);
        anno.label(l.name.clone()).legend(move |(x, y)| {
            let stroke = ShapeStyle::from(&color).stroke_width(2);
            if dashed {
                PathElement::new(vec![(x, y), (x + 7, y)], stroke)
            } else {
                PathElement::new(vec![(x, y), (x + 18, y)], stroke)
            }
        });
        c.draw_series(
            l.points
                .iter()
                .map(|&p| Circle::new(p, 2, l.color.filled())),
        )?;
    }
    c.configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(legend)
        .draw()?;
    Ok(())
}

pub fn line(name: &str, i: usize, dashed: bool, points: Vec<(f64, f64)>) -> Line {
    Line {
        name: name.to_string(),
        color: PALETTE[i % PALETTE.len()],
        dashed,
        points,
    }
}
