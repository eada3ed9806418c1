// The checks of an end-to-end script (e2e.mjs, web.mjs): each is named,
// timed and reported on a line of its own; passed() counts those that
// passed, for the script's last line, which the Go test looks for.
let count = 0;

export async function check(name, fn) {
  const t0 = Date.now();
  await fn();
  count++;
  console.log(`ok   ${name} (${Date.now() - t0} ms)`);
}

export const passed = () => count;
