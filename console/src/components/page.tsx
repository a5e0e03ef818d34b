import { type ReactNode, useEffect } from 'react';

/** A page's frame: its <h1>, the document title, and its content. */
export function Page({
  title,
  actions,
  children,
}: {
  title: string;
  actions?: ReactNode;
  children: ReactNode;
}) {
  useEffect(() => {
    document.title = `${title} · Gatehouse console`;
  }, [title]);
  return (
    <>
      <div className="page-head">
        <h1>{title}</h1>
        {actions}
      </div>
      {children}
    </>
  );
}
