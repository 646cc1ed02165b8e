// The built-in prompt set of `verbatim check` and `verbatim bench`: the seed page's setup, one
// shared system prompt of about 170 tokens followed by varied user questions (ShareGPT-like:
// facts, how-to, code, maths, writing, advice), so prefix caching has a long shared prefix to hit.
#include "client/prompts.h"

namespace verbatim::client {

const std::string& builtin_system_prompt() {
  static const std::string s =
      "You are a careful, friendly assistant working for a public library's online help desk. "
      "Answer the visitor's question directly in the first sentence, then add the few details that "
      "matter most. Prefer plain words over jargon, and explain any technical term the first time "
      "you use it. When a question has several reasonable answers, name the two or three most common "
      "ones and say when each applies. If you are not sure about a fact, say so instead of guessing, "
      "and suggest where the visitor could check it. Use short paragraphs or a brief list when steps "
      "must happen in order. Do not invent book titles, quotes, statistics or web addresses. Keep "
      "answers under two hundred words unless the visitor asks for more, and never include personal "
      "opinions about politics or religion. End with one short follow-up suggestion when it helps.";
  return s;
}

const std::vector<std::string>& builtin_questions() {
  static const std::vector<std::string> q = {
      "What is the difference between weather and climate?",
      "How do I make a simple sourdough starter at home?",
      "Explain recursion to a ten-year-old.",
      "Write a Python function that checks whether a string is a palindrome.",
      "Why is the sky blue during the day and red at sunset?",
      "What are three good habits for keeping a houseplant alive?",
      "Summarize the plot of Romeo and Juliet in four sentences.",
      "How many minutes are there in a week? Show the calculation.",
      "What does a central bank do when it raises interest rates?",
      "Give me a packing list for a two-day hiking trip in autumn.",
      "What is the Pythagorean theorem and where is it used in daily life?",
      "How can I politely decline a meeting invitation from my manager?",
      "Translate 'Where is the train station?' into French, Spanish and German.",
      "What causes the seasons on Earth?",
      "Write a haiku about a rainy Monday morning.",
      "Explain what a database index is and why it speeds up queries.",
      "What are the main differences between a virus and a bacterium?",
      "How do I calculate the area of a circle with a radius of 7 cm?",
      "Suggest five names for a small coffee shop near a university.",
      "What is photosynthesis, in simple terms?",
      "How does compound interest work? Give an example with 1000 dollars.",
      "Write a short cover letter opening for a junior web developer job.",
      "Why do cats purr?",
      "Explain the difference between TCP and UDP.",
      "What should I do if my laptop battery drains very quickly?",
      "List the planets of the solar system in order from the Sun.",
      "How can I improve my sleep without taking medication?",
      "What is the capital of Australia, and why is it not Sydney?",
      "Write a SQL query that returns the ten most recent orders from a table called orders.",
      "What is inflation and how is it measured?",
      "Give me a simple recipe for a vegetable curry for four people.",
      "Explain how a bill becomes a law in a parliamentary system, briefly.",
      "What are prime numbers? List the first ten.",
      "How do noise-cancelling headphones work?",
      "Write a limerick about a forgetful robot.",
      "What is the difference between a simile and a metaphor?",
      "How do I remove a coffee stain from a cotton shirt?",
      "Explain Big O notation with one example.",
      "What were the main causes of the First World War?",
      "How much water should an adult drink each day?",
      "Write a bash command that counts the lines in every .txt file in a folder.",
      "Why does ice float on water?",
      "What is a good way to start learning to play the guitar?",
      "Explain the greenhouse effect in three sentences.",
      "What is the difference between an LLC and a sole proprietorship?",
      "Convert 72 degrees Fahrenheit to Celsius and explain the formula.",
      "Suggest a weekly exercise plan for a beginner with thirty minutes a day.",
      "What is machine learning, explained without math?",
      "How do vaccines train the immune system?",
      "Write a friendly reminder email about an unpaid invoice.",
      "What is the tallest mountain in Africa?",
      "Explain what a hash function is and give two uses.",
      "How can I tell if an egg is still fresh?",
      "What is the difference between 'affect' and 'effect'?",
      "Describe the water cycle step by step.",
      "Write a JavaScript snippet that debounces a function.",
      "Why do we have leap years?",
      "What are some tips for a successful job interview over video?",
      "How does a refrigerator keep food cold?",
      "If a train travels 180 km in 2.5 hours, what is its average speed?",
      "What is the role of mitochondria in a cell?",
      "Give three arguments for and three against school uniforms.",
      "How do I make my first pull request on GitHub?",
      "What is the story behind the Great Wall of China?",
      "Explain the rules of chess castling.",
      "What is a black hole?",
      "How should I store fresh herbs so they last longer?",
      "Write a short bedtime story about a lighthouse keeper and a seal.",
      "What is the difference between RAM and storage?",
      "Why do onions make people cry?",
      "Explain supply and demand with an example from a farmers' market.",
      "What are the symptoms of dehydration?",
  };
  return q;
}

}  // namespace verbatim::client
