/** `[##########----------]  50%` for a percentage, `width` cells wide between the brackets. */
export function progressBar(percent: number, width = 24, unicode = false): string {
  const clamped = Math.min(100, Math.max(0, percent));
  const filled = Math.round((clamped / 100) * width);
  const [full, empty] = unicode ? ['█', '░'] : ['#', '-'];
  return `[${full.repeat(filled)}${empty.repeat(width - filled)}] ${clamped.toFixed(0).padStart(3)}%`;
}
