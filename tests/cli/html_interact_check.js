// Appended to a report page by html_screenshot.sh and run in headless Chromium: what a user does
// with the page, in a real DOM (real focus, key and wheel events, layout, scrolling). The page opens
// its timeline on the steady state; the wheel leaves the view alone (the page scrolls) until the
// timeline has focus, then zooms; keys pan and zoom; a gap row's link shows the gap on the timeline,
// scrolls to it and focuses it; thread labels fit their column; API names carry no _vNNNN suffix;
// metric cards say which device (and rank) they are, a device with NCCL kernels has communication
// cards. Prints one console line, "interact: ok ..." or "interact: FAILED ...", that the script
// reads from Chromium's log. html_screenshot.sh makes requestAnimationFrame a 16 ms timer first:
// headless Chromium under a virtual-time budget runs frames irregularly, and every check below
// reads what the timeline drew (data-view).
window.addEventListener('load', async function () {
  var passed = [], failed = [];
  function check(ok, what) { (ok ? passed : failed).push(what); }
  function settle() { return new Promise(function (resolve) { setTimeout(resolve, 50); }); }
  try {
    var tl = document.querySelector('.tl'), canvas = tl.querySelector('canvas.tl-plot');
    function view() { return tl.getAttribute('data-view').split(':').map(Number); }
    var span = Number(tl.dataset.span), steady = (tl.dataset.steady || '').split(':').map(Number);
    var v = view();
    check(steady.length === 2 && Math.abs(v[0] - steady[0] / span) < 1e-5 && Math.abs(v[1] - steady[1] / span) < 1e-5,
          'opens on the steady state (' + v + ')');
    var box = canvas.getBoundingClientRect();
    async function wheel() {
      var e = new WheelEvent('wheel', { deltaY: -100, clientX: box.left + box.width / 2, clientY: box.top + 30,
                                        bubbles: true, cancelable: true });
      canvas.dispatchEvent(e);
      await settle();
      return e.defaultPrevented;
    }
    var before = view();
    check(!(await wheel()) && view()[0] === before[0] && view()[1] === before[1], 'the wheel scrolls the page without focus');
    canvas.dispatchEvent(new MouseEvent('mousedown', { clientX: box.left + 10, clientY: box.top + 30, bubbles: true }));
    window.dispatchEvent(new MouseEvent('mouseup', { bubbles: true }));
    check(document.activeElement === tl, 'a click gives the timeline focus');
    check((await wheel()) && view()[1] - view()[0] < before[1] - before[0], 'with focus the wheel zooms');
    async function key(k) {
      var e = new KeyboardEvent('keydown', { key: k, bubbles: true, cancelable: true });
      tl.dispatchEvent(e);
      await settle();
      return e.defaultPrevented;
    }
    v = view(); check((await key('ArrowLeft')) && view()[0] < v[0], 'ArrowLeft pans left');
    v = view(); check((await key('d')) && view()[0] > v[0], 'D pans right');
    v = view(); check((await key('+')) && view()[1] - view()[0] < v[1] - v[0], '+ zooms in');
    v = view(); check((await key('-')) && view()[1] - view()[0] > v[1] - v[0], '- zooms out');
    check((await key('0')) && view()[0] === 0 && view()[1] === 1, '0 shows the whole run');
    var cut = [], threads = 0;
    tl.querySelectorAll('.tl-labels > div').forEach(function (label) {
      if (label.textContent.indexOf('tid') < 0) return;
      threads++;
      if (label.scrollWidth > label.clientWidth) cut.push(label.textContent);
    });
    check(threads > 0 && cut.length === 0, threads + ' thread labels fit their column (cut: ' + cut.join(' | ') + ')');
    var versioned = [];
    tl.querySelectorAll('.tl-names > li').forEach(function (li) { if (/_v\d+$/.test(li.textContent)) versioned.push(li.textContent); });
    check(versioned.length === 0, 'API names without _vNNNN (' + versioned.slice(0, 3).join(', ') + ')');
    // A gap row's link, clicked with the page scrolled to its end and the timeline without focus.
    tl.blur();
    window.scrollTo(0, document.body.scrollHeight);
    var link = null;  // the shortest gap: the view must close in on it
    document.querySelectorAll('table a.jump').forEach(function (a) {
      var length = Number(a.dataset.t1) - Number(a.dataset.t0);
      if (length > 0 && (!link || length < Number(link.dataset.t1) - Number(link.dataset.t0))) link = a;
    });
    var scrolled = window.scrollY;
    link.click();
    await settle();
    var t0 = Number(link.dataset.t0) / span, t1 = Number(link.dataset.t1) / span, at = tl.getBoundingClientRect();
    check(view()[0] <= t0 && view()[1] >= t1 && view()[1] - view()[0] <= 3.01 * (t1 - t0) + 1e-6,
          'a gap link shows the gap (' + view() + ' for ' + t0.toFixed(6) + ':' + t1.toFixed(6) + ')');
    check(window.scrollY < scrolled && at.bottom > 0 && at.top < window.innerHeight,
          'a gap link scrolls to the timeline (' + scrolled + ' -> ' + window.scrollY + ')');
    check(document.activeElement === tl, 'a gap link focuses the timeline');
    var who = [];
    document.querySelectorAll('.card.who').forEach(function (c) { who.push(c.textContent.replace(/\s+/g, ' ').trim()); });
    check(who.length > 0 && who.every(function (c) { return /device \d+/.test(c); }), 'cards name their device: ' + who.join(' | '));
    var comm = Array.prototype.some.call(tl.querySelectorAll('.tl-labels > div'), function (l) { return l.textContent === 'comm engine'; });
    var commCards = Array.prototype.filter.call(document.querySelectorAll('.card'), function (c) { return /communication hidden/i.test(c.textContent); });
    check(comm === (commCards.length > 0), (comm ? 'a device with NCCL kernels has communication cards (' + commCards.length + ')'
                                                 : 'no communication cards without NCCL kernels'));
  } catch (e) {
    failed.push('threw: ' + e);
  }
  console.log('interact: ' + (failed.length ? 'FAILED: ' + failed.join('; ') + '; passed: ' : 'ok: ') + passed.join('; '));
});
