import { useQueryClient } from '@tanstack/react-query';
import { Link, Redirect, Route, Router, Switch } from 'wouter';
import { api } from './api/client';
import { useFocusKeeper } from './components/focus-keeper';
import { pagesFor } from './pages';
import { SignInPage } from './pages/sign-in';
import { signOut, useSession } from './session';

/** The shell: the sign-in page, or the navigation and the pages the session may open. */
export function App() {
  const session = useSession();
  const client = useQueryClient();
  useFocusKeeper();
  if (!session) return <SignInPage />;
  const pages = pagesFor(session.role);
  const first = pages[0]?.path ?? '/';

  return (
    <Router base="/console">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <span className="brand">Gatehouse</span>
        <nav aria-label="Console">
          <ul>
            {pages.map((p) => (
              <li key={p.path}>
                <Link href={p.path} className={(active) => (active ? 'active' : '')}>
                  {p.title}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <span className="who">
          Signed in: <code>{session.label}</code>
        </span>
        <button
          type="button"
          onClick={async () => {
            // A provider sign-in's key is deleted, not merely forgotten (a pasted key stays); the
            // gateway may also name the provider's sign-out page, which ends the session there too.
            const ended =
              session.via === 'oidc' ? await api.POST('/auth/sign-out').catch(() => undefined) : undefined;
            signOut();
            client.clear(); // nothing read with the key stays in memory
            const endSession = ended?.data?.end_session_url;
            if (endSession) window.location.assign(endSession);
          }}
        >
          Sign out
        </button>
      </header>
      <main id="main">
        <Switch>
          {pages.map((p) => (
            <Route key={p.path} path={p.path} component={p.component} />
          ))}
          <Route path="/">
            <Redirect to={first} />
          </Route>
          <Route>
            <h1>Page not found</h1>
            <p>
              There is no such page{session.role === 'operator' ? ' for the operator' : ''}.{' '}
              <Link href={first}>Go to the first page</Link>.
            </p>
          </Route>
        </Switch>
      </main>
    </Router>
  );
}
