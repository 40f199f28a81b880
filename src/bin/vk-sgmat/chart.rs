//! The bench chart (`vk-sgmat bench --plot FILE.svg`), drawn with plotters: throughput against
//! the square size on a log2 axis, one solid line per type pair, the cuBLAS figures of the same
//! pair dashed, each pair's `peak` ceiling as a dotted horizontal line, and the legend in its own
//! column right of the plot so it never covers data.

use crate::report::BenchRow;
use plotters::prelude::*;
use plotters::style::RGBColor;

const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(140, 86, 75),
];

/// The legend: a line of each entry's colour and dash ("solid", "dashed", else dotted) beside
/// its label, one entry under the other.
fn draw_legend(
    legend: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    entries: &[(String, RGBColor, &'static str)],
) -> anyhow::Result<()> {
    for (i, (label, color, kind)) in entries.iter().enumerate() {
        let y = 60 + 22 * i as i32;
        let (dash, gap) = match *kind {
            "solid" => (24, 0),
            "dashed" => (6, 4),
            _ => (2, 3),
        };
        let mut x = 8;
        while x < 32 {
            let end = (x + dash).min(32);
            legend.draw(&PathElement::new(vec![(x, y), (end, y)], color.stroke_width(2)))?;
            x = end + gap.max(1);
            if gap == 0 {
                break;
            }
        }
        legend.draw(&Text::new(label.clone(), (38, y - 7), ("sans-serif", 13)))?;
    }
    Ok(())
}

/// The chart as an SVG document.
pub fn render_svg(device: &str, rows: &[BenchRow]) -> anyhow::Result<String> {
    let squares: Vec<&BenchRow> = rows.iter().filter(|r| r.m == r.n && r.n == r.k).collect();
    anyhow::ensure!(!squares.is_empty(), "no square sizes to plot");
    let mut types: Vec<&str> = Vec::new();
    for r in &squares {
        if !types.contains(&r.types.as_str()) {
            types.push(&r.types);
        }
    }
    let log2 = |s: usize| (s as f64).log2();
    let (lo, hi) = squares.iter().fold((f64::MAX, f64::MIN), |(lo, hi), r| {
        (lo.min(log2(r.m)), hi.max(log2(r.m)))
    });
    let (lo, hi) = (lo.floor() - 0.25, hi.ceil() + 0.25);
    let top = squares
        .iter()
        .flat_map(|r| [r.tflops, r.cublas_tflops.unwrap_or(0.0), r.peak_tflops])
        .fold(0.0f64, f64::max)
        .max(1e-6)
        * 1.08;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 500)).into_drawing_area();
        root.fill(&WHITE)?;
        let (plot, legend) = root.split_horizontally(700);
        let mut chart = ChartBuilder::on(&plot)
            .caption(format!("GEMM throughput, M = N = K: {device}"), ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(lo..hi, 0.0..top)?;
        chart
            .configure_mesh()
            .x_desc("M = N = K (log2 scale)")
            .y_desc("TFLOP/s")
            .x_labels((hi - lo).ceil() as usize + 1)
            .x_label_formatter(&|v: &f64| {
                let r = v.round();
                if (v - r).abs() < 1e-6 {
                    format!("{}", 2f64.powf(r) as u64)
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|v: &f64| {
                if top >= 10.0 {
                    format!("{v:.0}")
                } else {
                    format!("{v:.2}")
                }
            })
            .light_line_style(WHITE.mix(0.0))
            .draw()?;
        let mut entries: Vec<(String, RGBColor, &'static str)> = Vec::new();
        for (i, t) in types.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let pts: Vec<&&BenchRow> = squares.iter().filter(|r| r.types == *t).collect();
            let ours: Vec<(f64, f64)> = pts.iter().map(|r| (log2(r.m), r.tflops)).collect();
            chart.draw_series(LineSeries::new(ours.clone(), color.stroke_width(2)))?;
            chart.draw_series(ours.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
            entries.push((format!("{t} (vk-sgmat)"), color, "solid"));
            let cublas: Vec<(f64, f64)> = pts
                .iter()
                .filter_map(|r| r.cublas_tflops.map(|c| (log2(r.m), c)))
                .collect();
            if !cublas.is_empty() {
                chart.draw_series(DashedLineSeries::new(cublas, 6, 4, color.stroke_width(1)))?;
                entries.push((format!("{t} cuBLAS"), color, "dashed"));
            }
            if let Some(peak) = pts.first().map(|r| r.peak_tflops).filter(|&p| p > 0.0) {
                chart.draw_series(DashedLineSeries::new(
                    [(lo, peak), (hi, peak)],
                    2,
                    3,
                    color.stroke_width(1),
                ))?;
                entries.push((format!("{t} peak ({peak:.0})"), color, "dotted"));
            }
        }
        draw_legend(&legend, &entries)?;
        root.present()?;
    }
    Ok(svg)
}
