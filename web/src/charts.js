// ECharts, tree-shaken: only the charts and components the dashboard uses.
import * as echarts from 'echarts/core';
import { LineChart, HeatmapChart, ScatterChart } from 'echarts/charts';
import {
  GridComponent, TooltipComponent, LegendComponent, VisualMapContinuousComponent,
  MarkLineComponent, MarkAreaComponent,
} from 'echarts/components';
import { CanvasRenderer } from 'echarts/renderers';
import { localTime, utc } from './format.js';

echarts.use([
  LineChart, HeatmapChart, ScatterChart, GridComponent, TooltipComponent, LegendComponent,
  VisualMapContinuousComponent, MarkLineComponent, MarkAreaComponent, CanvasRenderer,
]);

export const colors = {
  text: '#c9d1d9',
  muted: '#8b949e',
  grid: '#30363d',
  axis: '#484f58',
  p50: '#58a6ff',
  p90: '#a371f7',
  p99: '#f0883e',
  p999: '#ff7b72',
  forecast: '#3fb950',
  score: '#d29922',
  alert: '#f85149',
  pre: '#d29922',
  anomaly: '#db61a2',
  ok: '#3fb950',
};

const charts = new Map();  // element -> chart
const resizeObserver = typeof ResizeObserver === 'function'
  ? new ResizeObserver((entries) => {
    for (const e of entries) charts.get(e.target)?.resize();
  })
  : null;

// Creates (or returns) the chart in element el; charts of one group share their tooltip.
export function chartIn(el, group = 'series') {
  let chart = charts.get(el);
  if (!chart) {
    chart = echarts.init(el, null, { renderer: 'canvas' });
    chart.group = group;
    charts.set(el, chart);
    resizeObserver?.observe(el);
    echarts.connect(group);
  }
  return chart;
}

export function disposeCharts(root) {
  for (const [el, chart] of charts) {
    if (!root || root.contains(el)) {
      resizeObserver?.unobserve(el);
      chart.dispose();
      charts.delete(el);
    }
  }
}

// Base options shared by the time-series charts.
export function baseOptions() {
  return {
    animation: false,
    textStyle: { color: colors.text, fontFamily: 'inherit' },
    grid: { left: 64, right: 24, top: 36, bottom: 28 },
    tooltip: {
      trigger: 'axis',
      backgroundColor: '#161b22',
      borderColor: colors.axis,
      textStyle: { color: colors.text, fontSize: 12 },
      axisPointer: { type: 'line', lineStyle: { color: colors.muted } },
    },
    legend: {
      top: 0, left: 56, textStyle: { color: colors.text, fontSize: 12 }, itemHeight: 8,
      inactiveColor: '#484f58',
    },
  };
}

export function timeAxis(fromMs, toMs) {
  return {
    type: 'time',
    min: fromMs,
    max: toMs,
    axisLine: { lineStyle: { color: colors.axis } },
    axisLabel: { color: colors.muted, hideOverlap: true },
    splitLine: { show: false },
  };
}

export function tooltipTitle(ms) {
  return `<b>${localTime(ms)}</b> <span style="color:${colors.muted}">${utc(ms)}</span>`;
}

export { echarts };
