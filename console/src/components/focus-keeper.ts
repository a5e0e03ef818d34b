import { useEffect } from 'react';

const FOCUSABLE =
  'a[href], button:not(:disabled), input:not(:disabled), select:not(:disabled), textarea, [tabindex="0"]';

/**
 * Keeps the keyboard's place when the control that has it is swapped for another: a row's Delete
 * for its confirmation, "Keep it" for the row's buttons again, a deleted row. React removes the
 * focused element and the focus would fall to the top of the page; it goes instead to the first
 * control, preferring a harmless one, in the nearest part of the page that is still there.
 */
export function useFocusKeeper() {
  useEffect(() => {
    let last: Element | null = null;
    let around: Element[] = [];
    const onFocus = (e: FocusEvent) => {
      last = e.target instanceof Element ? e.target : null;
      around = [];
      for (let a = last?.parentElement; a && a !== document.body; a = a.parentElement) around.push(a);
    };
    const observer = new MutationObserver(() => {
      if (!last || last.isConnected) return;
      if (document.activeElement && document.activeElement !== document.body) return;
      const near = around.find((a) => a.isConnected && a.querySelector(FOCUSABLE));
      last = null;
      const target =
        near?.querySelector<HTMLElement>(
          FOCUSABLE.split(', ')
            .map((s) => `${s}:not(.danger)`)
            .join(', '),
        ) ?? near?.querySelector<HTMLElement>(FOCUSABLE);
      target?.focus();
    });
    document.addEventListener('focusin', onFocus);
    observer.observe(document.body, { childList: true, subtree: true });
    return () => {
      document.removeEventListener('focusin', onFocus);
      observer.disconnect();
    };
  }, []);
}
