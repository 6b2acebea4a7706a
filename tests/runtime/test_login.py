"""The sign-in page, sessions and what an anonymous visitor can reach."""

import re
from pathlib import Path

import pytest

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def test_the_sign_in_page_renders_the_product_name_and_a_form(client, db):
    response = client.get("/accounts/login/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "RolloutUI" in html
    assert 'name="username"' in html and 'name="password"' in html
    assert "csrfmiddlewaretoken" in html
    assert "/static/css/app.css" in html
    # No external fonts, scripts or stylesheets.
    assert not re.search(r'(src|href)="(https?:)?//', html)


def test_an_operator_signs_in_and_is_sent_to_the_dashboard(client, operator, password):
    response = client.post("/accounts/login/", {"username": "operator", "password": password})
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.session["_auth_user_id"] == str(operator.pk)


def test_the_top_bar_shows_the_signed_in_user_and_a_sign_out_form_with_csrf(rf, operator):
    from django.template.loader import render_to_string

    request = rf.get("/")
    request.user = operator
    html = render_to_string("rolloutui/no_dashboard.html", request=request)
    assert '<span class="session-user" title="Signed in">operator</span>' in html
    form = html[html.index('<form method="post" action="/accounts/logout/"') :]
    form = form[: form.index("</form>")]
    assert "csrfmiddlewaretoken" in form and "Sign out" in form


def test_a_signed_in_user_opening_the_sign_in_page_is_sent_on(operator_client):
    assert operator_client.get("/accounts/login/").status_code == 302


def test_a_wrong_password_is_refused_with_a_message(client, operator):
    response = client.post("/accounts/login/", {"username": "operator", "password": "wrong"})
    assert response.status_code == 200
    assert "Please enter a correct username and password" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_signing_out_is_a_post_that_ends_the_session(operator_client):
    assert operator_client.get("/accounts/logout/").status_code == 405
    response = operator_client.post("/accounts/logout/")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/"
    assert operator_client.get("/").status_code == 302


def test_pages_redirect_anonymous_visitors_to_sign_in(client, db):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=/")


def test_the_api_docs_need_sign_in_and_load_their_assets_locally(client, viewer_client):
    assert client.get("/api/docs/").status_code in (401, 403)
    response = viewer_client.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "swagger-ui" in html
    assert "cdn." not in html and "unpkg" not in html
    assert viewer_client.get("/api/schema/").status_code == 200


def test_app_css_and_plotly_are_served_as_static_files(client):
    css = client.get("/static/css/app.css")
    assert css.status_code == 200
    plotly = client.get("/static/vendor/plotly.min.js")
    assert plotly.status_code == 200
    head = b"".join(plotly.streaming_content)[:200]
    assert b"plotly.js" in head


@pytest.mark.browser
def test_an_operator_signs_in_with_a_real_browser(live_server, page, operator, password):
    page.goto(f"{live_server.url}/accounts/login/")
    assert page.title() == "Sign in · RolloutUI"
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "login.png"), full_page=True)
    page.fill("#id_username", "operator")
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    assert any(c["name"] == "sessionid" for c in page.context.cookies())
    # The browser's session now opens what needs a signed-in user.
    assert page.request.get(f"{live_server.url}/api/schema/").status == 200


@pytest.mark.browser
def test_a_wrong_password_in_a_real_browser_shows_the_error(live_server, page, operator):
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "operator")
    page.fill("#id_password", "not-the-password")
    page.click("button[type=submit]")
    alert = page.locator(".alert-error")
    alert.wait_for()
    assert "correct username and password" in alert.inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "login-error.png"), full_page=True)
