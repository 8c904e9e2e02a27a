// How long the fuzz targets run: a few seconds in `npm test` (CI), far more with
// `npm run fuzz` (FUZZ_RUNS runs per target, at most FUZZ_SECONDS each).

export function fuzzParams(ciRuns: number, ciSeconds = 4): { runs: number; seconds: number } {
  const runs = Number(process.env["FUZZ_RUNS"] ?? "");
  const seconds = Number(process.env["FUZZ_SECONDS"] ?? "");
  return {
    runs: Number.isFinite(runs) && runs > 0 ? runs : ciRuns,
    seconds: Number.isFinite(seconds) && seconds > 0 ? seconds : ciSeconds,
  };
}
