// Hone report: draws the page's charts as SVG from the JSON in #hone-data.
// Written for this page, no library: exact tick labels, EMA smoothing, a
// choice of x axis (step, training time, tokens) and values on hover.
// Under Node it only exports its pure functions, for the tests.
(function () {
  'use strict';

  var SVGNS = 'http://www.w3.org/2000/svg';

  // decimal writes n × 10^e (n and e integers) exactly: decimal(15, -1) is
  // "1.5", decimal(2, 3) is "2000".
  function decimal(n, e) {
    var s = String(Math.abs(n));
    if (n === 0) {
      return '0';
    }
    if (e >= 0) {
      s += '0'.repeat(e);
    } else {
      s = s.padStart(-e + 1, '0');
      var cut = s.length + e;
      var frac = s.slice(cut).replace(/0+$/, '');
      s = s.slice(0, cut) + (frac ? '.' + frac : '');
    }
    return (n < 0 ? '-' : '') + s;
  }

  // tickLabel writes the tick n × 10^e exactly, short when that is exact
  // too: 15000 as "15k", 1.5 as "1.5" (never rounded to "2", which put the
  // tick at 1.5 under a wrong label). expo writes it in exponent form
  // (1.5e-7), which an axis uses for all its ticks or none.
  function tickLabel(n, e, expo) {
    if (n === 0) {
      return '0';
    }
    var digits = String(Math.abs(n)).length;
    var p = digits - 1 + e; // the value is d.ddd × 10^p
    if (expo) {
      return decimal(n, 1 - digits) + 'e' + p;
    }
    if (e >= 0 && p >= 4) {
      var s = Math.min(12, Math.floor(p / 3) * 3);
      return decimal(n, e - s) + { 3: 'k', 6: 'M', 9: 'G', 12: 'T' }[s];
    }
    return decimal(n, e);
  }

  // niceTicks puts ticks at multiples of 1, 2 or 5 × 10^e between min and
  // max, at most about target intervals apart; integer axes (steps, tokens)
  // never get a fractional tick. Each tick is {v, label}: v is the label's
  // own value, so the tick is drawn exactly where its label says.
  function niceTicks(min, max, integer, target) {
    target = target || 6;
    var span = max - min;
    // Past about 9e307 a side the span overflows to Infinity; q, the
    // interval wanted, is then taken from the ends divided first.
    var q = isFinite(span) ? span / target : max / target - min / target;
    var fits = function (step) {
      return isFinite(span) ? span / step <= target : q / step <= 1;
    };
    // A span within float64's rounding of the values (a series that
    // changes in its last bits) has no 1, 2 or 5 × 10^e steps that the
    // values can tell apart: counting them ran past 2^53 and without end.
    if (!(span > Math.max(Math.abs(min), Math.abs(max)) * 1e-12)) {
      return [{ v: min, label: fmtValue(min) }];
    }
    var e = Math.floor(Math.log10(q));
    var m = 0;
    [1, 2, 5].forEach(function (c) {
      if (!m && fits(c * Math.pow(10, e))) {
        m = c;
      }
    });
    if (!m) {
      m = 1;
      e += 1;
    }
    if (integer && e < 0) {
      m = 1;
      e = 0;
    }
    var step = m * Math.pow(10, e);
    var k0 = Math.ceil(min / step - 1e-9);
    var k1 = Math.floor(max / step + 1e-9);
    var ns = [];
    var pmax = -Infinity;
    for (var k = k0; k <= k1; k++) {
      ns.push(k * m);
      if (k !== 0) {
        pmax = Math.max(pmax, String(Math.abs(k * m)).length - 1 + e);
      }
    }
    var expo = pmax >= 15 || pmax < -3;
    var out = ns.map(function (n) {
      return { v: Number(decimal(n, e)), label: tickLabel(n, e, expo) };
    });
    return out;
  }

  // ema is the debiased exponential moving average TensorBoard and W&B
  // call smoothing: weight a on the past, the first points not pulled
  // toward zero.
  function ema(ys, a) {
    if (!(a > 0)) {
      return ys.slice();
    }
    var out = [];
    var last = 0;
    var w = 0;
    for (var i = 0; i < ys.length; i++) {
      last = last * a + (1 - a) * ys[i];
      w = w * a + (1 - a);
      out.push(last / w);
    }
    return out;
  }

  // fmtValue writes a value for reading on hover: whole numbers in full,
  // others to 6 significant digits.
  function fmtValue(v) {
    if (v === 0) {
      return '0';
    }
    var a = Math.abs(v);
    if (Number.isInteger(v) && a < 1e15) {
      return String(v);
    }
    if (a >= 1e-4 && a < 1e9) {
      return String(Number(v.toPrecision(6)));
    }
    return v.toExponential(5).replace(/\.?0+e/, 'e').replace('e+', 'e');
  }

  // mapX converts step x of a run to the chosen axis: the run's cumulative
  // training seconds or tokens or its wall time, linear between logged steps, 0 at step 0,
  // flat after the last. NaN when the run has no such axis.
  function mapX(run, axis, x) {
    if (axis === 'step') {
      return x;
    }
    var ys = run[axis];
    var xs = run.steps;
    if (!ys || !ys.length) {
      return NaN;
    }
    var px = 0;
    var py = 0;
    for (var i = 0; i < xs.length; i++) {
      if (x <= xs[i]) {
        return xs[i] === px ? ys[i] : py + (ys[i] - py) * (x - px) / (xs[i] - px);
      }
      px = xs[i];
      py = ys[i];
    }
    return py;
  }

  // nearest returns the index of the value in sorted xs closest to x.
  function nearest(xs, x) {
    var lo = 0;
    var hi = xs.length - 1;
    while (hi - lo > 1) {
      var mid = (lo + hi) >> 1;
      if (xs[mid] <= x) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    return Math.abs(xs[hi] - x) < Math.abs(xs[lo] - x) ? hi : lo;
  }

  function el(name, attrs, parent) {
    var e = document.createElementNS(SVGNS, name);
    Object.keys(attrs || {}).forEach(function (k) {
      e.setAttribute(k, attrs[k]);
    });
    if (parent) {
      parent.appendChild(e);
    }
    return e;
  }

  function pathOf(xs, ys, sx, sy) {
    var d = '';
    for (var i = 0; i < xs.length; i++) {
      d += (i ? 'L' : 'M') + sx(xs[i]).toFixed(1) + ' ' + sy(ys[i]).toFixed(1);
    }
    return d;
  }

  function bandOf(xs, lo, hi, sx, sy) {
    var d = pathOf(xs, hi, sx, sy);
    for (var i = xs.length - 1; i >= 0; i--) {
      d += 'L' + sx(xs[i]).toFixed(1) + ' ' + sy(lo[i]).toFixed(1);
    }
    return d + 'Z';
  }

  var AXIS_NAMES = { step: 'step', time: 'training time (s)', tokens: 'tokens', wall: 'wall time (s)' };

  // prepare maps a chart's lines onto the axis and smooths them; lines of
  // runs without that axis are listed in missing.
  function prepare(data, chart, state) {
    var lines = [];
    var missing = [];
    chart.lines.forEach(function (l, i) {
      var run = data.runs[l.run] || data.runs[0];
      var xs = l.x.map(function (x) {
        return mapX(run, state.axis, x);
      });
      if (xs.some(isNaN)) {
        missing.push(l.name);
        return;
      }
      var byLine = chart.byLine || data.runs.length === 1;
      var smooth = !l.points && state.smooth > 0 && l.y.length > 2;
      lines.push({
        src: l,
        xs: xs,
        ys: smooth ? ema(l.y, state.smooth) : l.y,
        smooth: smooth,
        color: byLine ? data.palette[i % data.palette.length] : run.color,
      });
    });
    return { lines: lines, missing: missing };
  }

  // domain is the range of every value drawn, padded so nothing runs along
  // the frame.
  function domain(lines, pointsOnly) {
    var d = { x0: Infinity, x1: -Infinity, y0: Infinity, y1: -Infinity };
    lines.forEach(function (p) {
      var l = p.src;
      p.xs.forEach(function (x) {
        d.x0 = Math.min(d.x0, x);
        d.x1 = Math.max(d.x1, x);
      });
      [l.y, l.lo, l.hi, l.min, l.max].forEach(function (ys) {
        (ys || []).forEach(function (y) {
          d.y0 = Math.min(d.y0, y);
          d.y1 = Math.max(d.y1, y);
        });
      });
    });
    // A series flat to within rounding (1e-12 of its size) is padded as a
    // flat one is, so that the axis has room for ticks. The padding is
    // taken from the ends scaled first, and the padded ends kept finite:
    // values past about 9e307 overflowed y1 - y0, and so the axis, to
    // Infinity.
    var dy = d.y1 * 0.06 - d.y0 * 0.06;
    if (!(dy > Math.max(Math.abs(d.y0), Math.abs(d.y1)) * 1e-12)) {
      dy = Math.max(Math.abs(d.y0) * 0.1, 1e-3);
    }
    d.y0 = Math.max(d.y0 - dy, -Number.MAX_VALUE);
    d.y1 = Math.min(d.y1 + dy, Number.MAX_VALUE);
    if (d.x1 === d.x0) {
      d.x0 -= 1;
      d.x1 += 1;
    } else if (pointsOnly) {
      var dx = d.x1 * 0.04 - d.x0 * 0.04;
      d.x0 = Math.max(d.x0 - dx, -Number.MAX_VALUE);
      d.x1 = Math.min(d.x1 + dx, Number.MAX_VALUE);
    }
    return d;
  }

  // frac is where v lies between a and b, 0 at a and 1 at b; halved first
  // where b - a overflows (ends beyond about ±9e307).
  function frac(v, a, b) {
    var span = b - a;
    return isFinite(span) ? (v - a) / span : (v / 2 - a / 2) / (b / 2 - a / 2);
  }

  function drawAxes(svg, g, xt, yt, xlabel, ylabel) {
    var grid = el('g', { class: 'grid' }, svg);
    xt.forEach(function (t) {
      var x = g.sx(t.v);
      el('line', { x1: x, x2: x, y1: g.top, y2: g.bottom }, grid);
      el('text', { x: x, y: g.bottom + 15, 'text-anchor': 'middle', class: 'xtick' }, svg).textContent = t.label;
    });
    yt.forEach(function (t) {
      var y = g.sy(t.v);
      el('line', { x1: g.left, x2: g.right, y1: y, y2: y }, grid);
      el('text', { x: g.left - 6, y: y + 4, 'text-anchor': 'end', class: 'ytick' }, svg).textContent = t.label;
    });
    el('rect', { class: 'frame', x: g.left, y: g.top, width: g.right - g.left, height: g.bottom - g.top }, svg);
    el('text', { x: (g.left + g.right) / 2, y: g.bottom + 31, 'text-anchor': 'middle', class: 'axis-label' }, svg).textContent = xlabel;
    var yl = el('text', { x: 0, y: 0, 'text-anchor': 'middle', class: 'axis-label', transform: 'translate(12,' + (g.top + g.bottom) / 2 + ') rotate(-90)' }, svg);
    yl.textContent = ylabel;
  }

  function drawLine(svg, g, p) {
    var l = p.src;
    if (l.min && l.max) {
      el('path', { d: bandOf(p.xs, l.min, l.max, g.sx, g.sy), fill: p.color, 'fill-opacity': 0.1, stroke: 'none' }, svg);
    }
    if (l.lo && l.hi) {
      el('path', { d: bandOf(p.xs, l.lo, l.hi, g.sx, g.sy), fill: p.color, 'fill-opacity': 0.22, stroke: 'none' }, svg);
    }
    if (p.smooth) {
      el('path', { d: pathOf(p.xs, l.y, g.sx, g.sy), fill: 'none', stroke: p.color, 'stroke-opacity': 0.3, 'stroke-width': 1.2, class: 'raw' }, svg);
    }
    var attrs = { d: pathOf(p.xs, p.ys, g.sx, g.sy), fill: 'none', stroke: p.color, 'stroke-width': 1.8, class: 'line', 'data-points': p.xs.length };
    if (l.dashed) {
      attrs['stroke-dasharray'] = '5 3';
    }
    el('path', attrs, svg);
    if (l.points || p.xs.length === 1) {
      p.xs.forEach(function (x, i) {
        el('circle', { cx: g.sx(x), cy: g.sy(p.ys[i]), r: 3.5, fill: p.color, class: 'point' }, svg);
      });
    }
  }

  // draw renders one chart into its figure.
  function draw(data, fig, chart, state) {
    var plot = fig.querySelector('.plot');
    var legend = fig.querySelector('.legend');
    plot.textContent = '';
    legend.textContent = '';
    var old = fig.querySelector('.plot-note');
    if (old) {
      old.remove();
    }
    var prep = prepare(data, chart, state);
    var W = plot.clientWidth || 520;
    var H = plot.clientHeight || 270;
    if (prep.missing.length) {
      var note = document.createElement('div');
      note.className = 'plot-note';
      note.textContent = 'No ' + AXIS_NAMES[state.axis] + ' logged for: ' + prep.missing.join(', ');
      fig.appendChild(note);
    }
    fig.dataset.drawn = 0;
    if (!prep.lines.length) {
      return;
    }
    var d = domain(prep.lines, chart.lines.every(function (l) {
      return l.points;
    }));
    var yt = niceTicks(d.y0, d.y1, false, 5);
    var widest = Math.max.apply(null, yt.map(function (t) {
      return t.label.length;
    }));
    var g = { left: 24 + widest * 6.6, right: W - 12, top: 8, bottom: H - 36 };
    var xt = niceTicks(d.x0, d.x1, state.axis === 'step' || state.axis === 'tokens', Math.max(2, Math.min(8, Math.floor((g.right - g.left) / 80))));
    g.sx = function (x) {
      return g.left + frac(x, d.x0, d.x1) * (g.right - g.left);
    };
    g.sy = function (y) {
      return g.bottom - frac(y, d.y0, d.y1) * (g.bottom - g.top);
    };
    var svg = el('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H });
    drawAxes(svg, g, xt, yt, AXIS_NAMES[state.axis], chart.ylabel);
    var drawn = 0;
    prep.lines.forEach(function (p) {
      drawLine(svg, g, p);
      drawn += p.xs.length;
    });
    plot.appendChild(svg);
    fig.dataset.drawn = drawn;
    fig.dataset.xticks = xt.map(function (t) {
      return t.label;
    }).join('|');
    fig.dataset.yticks = yt.map(function (t) {
      return t.label;
    }).join('|');
    if (chart.lines.length > 1 || data.runs.length > 1) {
      prep.lines.forEach(function (p) {
        var item = document.createElement('span');
        var sw = document.createElement('i');
        sw.style.background = p.color;
        item.appendChild(sw);
        item.appendChild(document.createTextNode(p.src.name));
        legend.appendChild(item);
      });
    }
    hover(fig, svg, g, prep.lines, state);
  }

  // describe is one line's entry in the hover box at point i.
  function describe(p, i) {
    var l = p.src;
    var s = fmtValue(p.ys[i]);
    if (p.smooth) {
      s += ' (raw ' + fmtValue(l.y[i]) + ')';
    }
    if (l.lo && l.min) {
      s += ', quartiles ' + fmtValue(l.lo[i]) + ' to ' + fmtValue(l.hi[i]) + ', range ' + fmtValue(l.min[i]) + ' to ' + fmtValue(l.max[i]);
    } else if (l.lo) {
      s += ', band ' + fmtValue(l.lo[i]) + ' to ' + fmtValue(l.hi[i]);
    } else if (l.min) {
      s += ', range ' + fmtValue(l.min[i]) + ' to ' + fmtValue(l.max[i]);
    }
    return s;
  }

  // hover shows, under the pointer, every line's value at the nearest
  // logged x.
  function hover(fig, svg, g, lines, state) {
    var cursor = el('g', { visibility: 'hidden' }, svg);
    var tip = fig.querySelector('.tooltip') || document.createElement('div');
    tip.className = 'tooltip';
    tip.hidden = true;
    fig.appendChild(tip);
    var area = el('rect', { x: g.left, y: g.top, width: g.right - g.left, height: g.bottom - g.top, fill: 'transparent', class: 'hover-area' }, svg);
    area.addEventListener('mousemove', function (ev) {
      var box = svg.getBoundingClientRect();
      var mx = ev.clientX - box.left;
      var best = null;
      lines.forEach(function (p) {
        var i = nearestPixel(p.xs, g, mx);
        var dist = Math.abs(g.sx(p.xs[i]) - mx);
        if (!best || dist < best.dist) {
          best = { dist: dist, x: p.xs[i], step: p.src.x[i] };
        }
      });
      cursor.textContent = '';
      cursor.setAttribute('visibility', 'visible');
      el('line', { class: 'cursor', x1: g.sx(best.x), x2: g.sx(best.x), y1: g.top, y2: g.bottom }, cursor);
      tip.textContent = '';
      var head = document.createElement('div');
      head.className = 'x';
      head.textContent = state.axis === 'step' ? 'step ' + fmtValue(best.x) : AXIS_NAMES[state.axis] + ' ' + fmtValue(best.x) + ' (step ' + fmtValue(best.step) + ')';
      tip.appendChild(head);
      lines.forEach(function (p) {
        var i = nearest(p.xs, best.x);
        if (p.xs[i] !== best.x) {
          return;
        }
        el('circle', { cx: g.sx(p.xs[i]), cy: g.sy(p.ys[i]), r: 4, fill: '#fff', stroke: p.color, 'stroke-width': 2 }, cursor);
        var row = document.createElement('div');
        var sw = document.createElement('i');
        sw.style.background = p.color;
        row.appendChild(sw);
        row.appendChild(document.createTextNode(p.src.name + ': ' + describe(p, i)));
        tip.appendChild(row);
        if (p.src.note && p.src.note[i]) {
          var n = document.createElement('div');
          n.className = 'n';
          n.textContent = p.src.note[i];
          tip.appendChild(n);
        }
      });
      tip.hidden = false;
      var left = g.sx(best.x) + 16;
      if (left + tip.offsetWidth > fig.clientWidth) {
        left = Math.max(0, g.sx(best.x) - tip.offsetWidth - 16);
      }
      tip.style.left = left + 'px';
      tip.style.top = (g.top + 24) + 'px';
    });
    area.addEventListener('mouseleave', function () {
      cursor.setAttribute('visibility', 'hidden');
      tip.hidden = true;
    });
  }

  // nearestPixel is the index of the point of xs drawn closest to pixel mx.
  function nearestPixel(xs, g, mx) {
    var best = 0;
    for (var i = 1; i < xs.length; i++) {
      if (Math.abs(g.sx(xs[i]) - mx) < Math.abs(g.sx(xs[best]) - mx)) {
        best = i;
      }
    }
    return best;
  }

  function main() {
    var src = document.getElementById('hone-data');
    if (!src) {
      return;
    }
    var data = JSON.parse(src.textContent);
    var state = { axis: 'step', smooth: 0 };
    var axis = document.getElementById('xaxis');
    var smooth = document.getElementById('smooth');
    var smoothOut = document.getElementById('smooth-value');
    ['time', 'tokens', 'wall'].forEach(function (a) {
      var opt = axis.querySelector('option[value="' + a + '"]');
      opt.disabled = !data.runs.some(function (r) {
        return r[a] && r[a].length;
      });
    });
    function render() {
      document.querySelectorAll('figure.chart').forEach(function (fig) {
        // One chart that fails to draw leaves the others drawn; the error
        // still reaches the console.
        try {
          draw(data, fig, data.charts[Number(fig.dataset.i)], state);
        } catch (e) {
          fig.querySelector('.plot').textContent = 'This chart failed to draw: ' + e;
          setTimeout(function () {
            throw e;
          });
        }
      });
    }
    axis.addEventListener('change', function () {
      state.axis = axis.value;
      render();
    });
    smooth.addEventListener('input', function () {
      state.smooth = Number(smooth.value);
      smoothOut.textContent = smooth.value;
      render();
    });
    var pending = false;
    window.addEventListener('resize', function () {
      if (!pending) {
        pending = true;
        requestAnimationFrame(function () {
          pending = false;
          render();
        });
      }
    });
    document.querySelectorAll('.run-rollouts').forEach(function (box) {
      var sel = box.querySelector('select.rollout-step');
      sel.addEventListener('change', function () {
        box.querySelectorAll('.rollout').forEach(function (r) {
          r.hidden = r.dataset.i !== sel.value;
        });
      });
    });
    render();
  }

  if (typeof module === 'object' && module.exports) {
    module.exports = { niceTicks: niceTicks, domain: domain, frac: frac, tickLabel: tickLabel, decimal: decimal, ema: ema, fmtValue: fmtValue, mapX: mapX };
  } else if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', main);
  } else {
    main();
  }
})();
