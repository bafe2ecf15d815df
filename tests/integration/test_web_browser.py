"""The web view in a real headless Chromium (Debian's, through Selenium) against the app's
own web server on 127.0.0.1 and the fake model: the link from `/web`, facts, episodes and the
last recall on the page, a click on the map, and a forget that reaches the database.

With STRATA_WEB_SCREENSHOTS=DIR the test also saves the view at desktop and phone width
(docs/web-desktop.png, docs/web-phone.png were made so).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from strata.app.compose import App
from strata.core.clock import ManualClock
from strata.memory.coordination.jobruns import JobRunRepo
from strata.memory.rules.fact_types import NewFact
from strata.memory.store.episodes import EpisodeRepo, NewEpisode
from tests.fakes.openai_server import FakeOpenAI
from tests.web_helpers import chromium, say, web_app, web_link


class Browser:
    """Selenium's calls block, and the server runs on this test's event loop: every call
    goes to a thread so the server can answer meanwhile."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver

    async def get(self, url: str) -> None:
        await asyncio.to_thread(self.driver.get, url)

    async def body(self) -> str:
        return str(await asyncio.to_thread(
            lambda: self.driver.find_element("tag name", "body").text))

    async def click(self, css: str, *, then: str) -> None:
        """Click `css` and wait for the page it leads to: the one with an element `then` (a
        click returns before the navigation it starts has finished)."""
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.support import expected_conditions
        from selenium.webdriver.support.ui import WebDriverWait

        def run() -> None:
            old = self.driver.find_element("tag name", "html")
            self.driver.find_element("css selector", css).click()

            # Gone from the document: Chrome mid-navigation may answer "Node with given id
            # does not belong to the document" (a plain WebDriverException) instead of a
            # stale-element error, which `staleness_of` lets through (a failure seen in CI).
            def left(_: Any) -> bool:
                try:
                    old.is_enabled()
                except WebDriverException:
                    return True
                return False

            wait = WebDriverWait(self.driver, 15)
            wait.until(left)
            wait.until(expected_conditions.presence_of_element_located(("css selector", then)))

        await asyncio.to_thread(run)

    async def url(self) -> str:
        return str(await asyncio.to_thread(lambda: self.driver.current_url))

    async def source(self) -> str:
        return str(await asyncio.to_thread(lambda: self.driver.page_source))


async def seed(app: App, clock: ManualClock) -> dict[str, int]:
    """alice's memory: a few turns, three episodes over them, facts (one with markup), a job."""
    await say(app, clock, "I keep bees in my garden in Lyon.")
    await say(app, clock, "The hives need checking before the frost.")
    await say(app, clock, "I also run by the river on Sundays.")
    alice = await app.persons.find("alice")
    assert alice is not None
    rows = [r for r in await app.transcript.for_owner(alice.id)]
    episodes = EpisodeRepo(app.db)
    ids = {}
    for n, (summary, part) in enumerate([
            ("alice keeps bees in her garden in Lyon", rows[0:2]),
            ("the hives need checking before the frost", rows[2:4]),
            ("alice runs by the river on Sundays", rows[4:6])]):
        vec = (await app.embedder.embed([summary]))[0]
        ids[f"episode{n}"] = await episodes.insert(NewEpisode(
            alice.id, part[0].channel_id, summary, "user", part[0].ts, part[-1].ts,
            tuple(r.id for r in part), salience=0.3 + 0.2 * n), vec, clock.now())
    bees = await app.facts.add(NewFact(alice.id, "user_specific", "Keeps bees in Lyon", "user",
                                       channel_id=rows[0].channel_id,
                                       row_ids=(rows[0].id,),
                                       episode_ids=(ids["episode0"],)), clock.now())
    run = await app.facts.add(NewFact(alice.id, "behavioral_pattern",
                                      "Runs by the river on Sundays", "user"), clock.now())
    markup = await app.facts.add(NewFact(
        alice.id, "note", "Remember <script>document.title='pwned'</script> literally",
        "user"), clock.now())
    runs = JobRunRepo(app.db)
    job = await runs.start("portrait", alice.id, clock.now())
    await runs.finish(job, now=clock.now(), status="ok", result="portrait updated", tokens=321)
    assert bees.fact_id and run.fact_id and markup.fact_id
    return {**ids, "bees": bees.fact_id, "run": run.fact_id, "markup": markup.fact_id,
            "alice": alice.id}


async def test_a_person_sees_and_forgets_their_memory_in_a_browser(
        fake_openai: FakeOpenAI, db_target: Path | str, clock: ManualClock) -> None:
    async with web_app(fake_openai, db_target, clock) as web:
        app = web.app
        ids = await seed(app, clock)
        await say(app, clock, "how are my bees doing?")  # recall runs before this reply
        link = await web_link(app, clock)
        assert link.startswith(web.base + "/open/")
        with chromium() as driver:
            browser = Browser(driver)
            await browser.get(link)
            await browser.click("#open", then="#recall")
            page = await browser.body()
            assert "What Strata remembers about alice" in page
            # Facts by kind with provenance, episodes with level and weight, the last recall.
            assert "Keeps bees in Lyon" in page and "Runs by the river on Sundays" in page
            assert "from your conversation, console private" in page
            assert "alice keeps bees in her garden in Lyon" in page
            assert "you said: how are my bees doing?" in page
            recalled = (await app.recall_log.recent(ids["alice"]))[0].block
            assert recalled and "Keeps bees in Lyon" in recalled
            assert "Keeps bees in Lyon" in page.split("Topic map")[0]  # in the recall section
            assert "portrait" in page and "portrait updated" in page and "321" in page
            # Markup in a memory is text: shown literally, never run (the title is untouched).
            assert "Remember <script>document.title='pwned'</script> literally" in page
            assert await asyncio.to_thread(lambda: driver.title) == "Your memory · Strata"
            shots = os.environ.get("STRATA_WEB_SCREENSHOTS")
            if shots:
                await take_screenshots(browser, Path(shots))

            # The map: a point is a link to its episode, with the episode as hover text.
            episode = ids["episode1"]
            hover = await asyncio.to_thread(lambda: driver.find_element(
                "css selector", f"#point-{episode} title").get_attribute("textContent"))
            assert hover == "leaf: the hives need checking before the frost"
            await browser.click(f"#point-{episode} circle", then="#summary")
            assert (await browser.url()).endswith(f"/episode/{episode}")
            page = await browser.body()
            assert "the hives need checking before the frost" in page
            assert "The hives need checking before the frost." in page  # a cited row

            # Forget one fact with its button: gone from the page and from the database.
            await browser.get(web.base + "/")
            await browser.click(f"#fact-{ids['bees']} button.forget", then="#back")
            assert "Forgotten:" in await browser.body()
            await browser.click("#back", then="#facts")
            page = await browser.body()
            assert "Keeps bees in Lyon" not in page
            assert "Runs by the river on Sundays" in page
            assert await app.facts.repo.get(ids["bees"]) is None
            assert "Keeps bees in Lyon" not in str(await app.recall_log.recent(ids["alice"]))


async def take_screenshots(browser: Browser, folder: Path) -> None:
    driver = browser.driver
    for name, (width, height) in {"desktop": (1280, 1500), "phone": (390, 844)}.items():
        await asyncio.to_thread(driver.set_window_size, width, height)
        await browser.get(driver.current_url.split("#")[0])
        await asyncio.to_thread(driver.save_screenshot, str(folder / f"web-{name}.png"))
    await asyncio.to_thread(driver.set_window_size, 1280, 900)
