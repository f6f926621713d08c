// "Did you mean" suggestions by edit distance, for unknown fields, variables and functions.

/** Optimal string alignment distance: insertions, deletions, substitutions, transpositions. */
export function editDistance(left: string, right: string): number {
  if (left === right) return 0;
  if (left.length === 0) return right.length;
  if (right.length === 0) return left.length;
  let beforePrevious: number[] = [];
  let previous = Array.from({ length: right.length + 1 }, (_, index) => index);
  for (let row = 1; row <= left.length; row += 1) {
    const current = [row];
    for (let column = 1; column <= right.length; column += 1) {
      const cost = left[row - 1] === right[column - 1] ? 0 : 1;
      let best = Math.min(
        previous[column]! + 1,
        current[column - 1]! + 1,
        previous[column - 1]! + cost,
      );
      if (
        row > 1 &&
        column > 1 &&
        left[row - 1] === right[column - 2] &&
        left[row - 2] === right[column - 1]
      ) {
        best = Math.min(best, beforePrevious[column - 2]! + 1);
      }
      current.push(best);
    }
    beforePrevious = previous;
    previous = current;
  }
  return previous[right.length]!;
}

function normalise(name: string): string {
  return name.toLowerCase().replaceAll(/[-_]/g, "");
}

/**
 * The candidate closest to `name`, if it is close enough to be a likely typo: same letters in
 * another case or with `_`/`-` dropped, or a third of the letters wrong at most.
 */
export function closestMatch(name: string, candidates: Iterable<string>): string | undefined {
  const normalised = normalise(name);
  const allowed = Math.min(3, Math.max(1, Math.floor(name.length / 3)));
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    if (candidate === name) continue;
    const distance =
      normalise(candidate) === normalised
        ? 0
        : editDistance(name.toLowerCase(), candidate.toLowerCase());
    if (distance <= allowed && distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}
