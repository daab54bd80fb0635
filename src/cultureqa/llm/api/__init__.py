"""Hosted and self-hosted model APIs: the chat client, transports, retries, replicas, batches.

Nothing here is imported by ``cultureqa.llm`` itself, so a stage that only scores the embedded
model never pays for aiohttp or litellm.
"""
